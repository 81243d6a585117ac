#include "controller.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace nvl {
namespace {

std::string short_lower(std::string_view name) {
    std::string s(name.substr(0, name.find('.')));
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

} // namespace

ControllerRole controller_role(const std::vector<std::string>& hosts, const std::vector<bool>& answers,
                               const std::vector<std::string>& my_names) {
    ControllerRole r;
    if (hosts.size() <= 1) return r; // no backup controller: nothing to choose
    size_t in_control = hosts.size();
    for (size_t i = 0; i < hosts.size() && i < answers.size(); ++i)
        if (answers[i]) {
            in_control = i;
            break;
        }
    if (in_control == hosts.size()) {
        r.active = false;
        r.why = "no slurmctld answers (none of the SlurmctldHost entries)";
        return r;
    }
    const std::string ctl = short_lower(hosts[in_control]);
    const bool here =
        std::any_of(my_names.begin(), my_names.end(), [&](const std::string& n) { return short_lower(n) == ctl; });
    r.active = here;
    r.why = fmt::format("the slurmctld in control runs on {} (SlurmctldHost #{}){}", hosts[in_control], in_control,
                        here ? ", this host" : ", not this host: standing by");
    return r;
}

} // namespace nvl
