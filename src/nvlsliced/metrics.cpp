#include "metrics.hpp"

#include "error.hpp"
#include "http_request.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <map>

namespace nvl {

void Metrics::add_cycle(const CycleStats& s, double seconds, bool failed, const CyclePhases& phases) {
    std::lock_guard<std::mutex> g(mu_);
    phase_sum_.load += phases.load;
    phase_sum_.decide += phases.decide;
    phase_sum_.apply += phases.apply;
    phase_sum_.actions += phases.actions;
    placements_ += s.placements;
    repairs_ += s.repairs_in_rack;
    moves_ += s.moves;
    preemptions_ += s.defrag_preemptions;
    evacuations_ += s.evacuations;
    requeued_to_wait_ += s.repairs_requeued_to_wait;
    held_ += s.repairs_held;
    if (!s.racks.empty()) racks_ = s.racks; // a failed cycle keeps the last figures
    unrepairable_ = s.unrepairable;
    errors_ += failed;
    cycles_ += 1;
    cycle_sum_ += seconds;
    cycle_last_ = seconds;
    cycle_max_ = std::max(cycle_max_, seconds);
    pending_ = s.pending_by_reason;
}

void Metrics::set_racks(std::vector<std::string> names) {
    std::lock_guard<std::mutex> g(mu_);
    rack_names_ = std::move(names);
    racks_.clear();
}

std::string Metrics::render() const {
    std::lock_guard<std::mutex> g(mu_);
    std::string o;
    auto counter = [&](const char* name, const char* help, double v) {
        o += fmt::format("# HELP {0} {1}\n# TYPE {0} counter\n{0} {2}\n", name, help, v);
    };
    counter("nvlslice_placements_total", "Slice jobs placed and released.", placements_);
    counter("nvlslice_repairs_from_spares_total", "Slices repaired inside their own rack.", repairs_);
    counter("nvlslice_cross_rack_moves_total", "Slices moved to another rack by a repair.", moves_);
    counter("nvlslice_defrag_preemptions_total", "Checkpointable jobs requeued to free a rack.", preemptions_);
    counter("nvlslice_rack_evacuations_total", "Slice jobs moved out of degraded racks.", evacuations_);
    counter("nvlslice_repairs_requeued_to_wait_total",
            "Slice jobs that lost a node with no room for their repair anywhere, requeued to wait with their priority.",
            requeued_to_wait_);
    counter("nvlslice_repairs_held_total",
            "Slice jobs that lost a node with no room now, requeued with their target held until it frees.", held_);
    counter("nvlslice_cycle_errors_total", "Cycles whose actions failed part way.", errors_);
    o += "# HELP nvlslice_unrepairable_jobs Running --no-requeue slice jobs that lost a node.\n"
         "# TYPE nvlslice_unrepairable_jobs gauge\n";
    o += fmt::format("nvlslice_unrepairable_jobs {}\n", unrepairable_);
    // Per rack: one gauge family per figure, labelled rack="NAME".
    std::vector<std::string> labels;
    for (const auto& rack : rack_names_) {
        std::string label; // a label value escapes \\, " and newlines
        for (char c : rack) {
            if (c == '\\' || c == '"')
                label += {'\\', c};
            else if (c == '\n')
                label += "\\n";
            else
                label += c;
        }
        labels.push_back(std::move(label));
    }
    auto per_rack = [&](const char* name, const char* help, auto value) {
        o += fmt::format("# HELP {0} {1}\n# TYPE {0} gauge\n", name, help);
        for (size_t i = 0; i < racks_.size() && i < labels.size(); ++i)
            o += fmt::format("{}{{rack=\"{}\"}} {}\n", name, labels[i], value(racks_[i]));
    };
    using R = CycleStats::Rack;
    per_rack("nvlslice_rack_free_nodes", "Idle nodes of the rack outside the spare reservation.",
             [](const R& r) { return r.free; });
    per_rack("nvlslice_rack_spare_nodes", "Idle nodes of the rack in the spare reservation.",
             [](const R& r) { return r.spare; });
    per_rack("nvlslice_rack_lent_nodes", "Nodes of the rack lent to preemptible work that a repair takes back.",
             [](const R& r) { return r.lent; });
    per_rack("nvlslice_rack_slice_nodes", "Nodes of the rack running slice jobs.",
             [](const R& r) { return r.slice_nodes; });
    per_rack("nvlslice_rack_failed_nodes", "Nodes of the rack draining, drained or down.",
             [](const R& r) { return r.failed; });
    per_rack("nvlslice_rack_slice_room_nodes", "Free nodes a new slice may take in the rack (its spares kept).",
             [](const R& r) { return r.room; });
    per_rack("nvlslice_rack_degraded",
             "1 when the rack is degraded (failed nodes beyond its spares, or a rack-level failure): no new slices, "
             "its slice jobs move out.",
             [](const R& r) { return r.degraded ? 1 : 0; });
    o += "# HELP nvlslice_pending_slice_jobs Slice jobs waiting for a placement, by reason.\n"
         "# TYPE nvlslice_pending_slice_jobs gauge\n";
    for (const char* r : {"slice_too_large", "no_domain_large_enough", "would_consume_spares", "fragmented", "busy"}) {
        auto it = pending_.find(r);
        o += fmt::format("nvlslice_pending_slice_jobs{{reason=\"{}\"}} {}\n", r, it == pending_.end() ? 0 : it->second);
    }
    o += "# HELP nvlslice_cycle_seconds Duration of reconcile cycles (load, decide, apply).\n"
         "# TYPE nvlslice_cycle_seconds summary\n";
    o += fmt::format("nvlslice_cycle_seconds_sum {:.6f}\nnvlslice_cycle_seconds_count {}\n", cycle_sum_, cycles_);
    o += fmt::format("# HELP nvlslice_cycle_last_seconds Duration of the last reconcile cycle.\n"
                     "# TYPE nvlslice_cycle_last_seconds gauge\nnvlslice_cycle_last_seconds {:.6f}\n",
                     cycle_last_);
    o += "# HELP nvlslice_cycle_phase_seconds_total Time spent per phase of the cycles: reading Slurm, deciding, "
         "applying actions.\n# TYPE nvlslice_cycle_phase_seconds_total counter\n";
    o += fmt::format("nvlslice_cycle_phase_seconds_total{{phase=\"load\"}} {:.6f}\n"
                     "nvlslice_cycle_phase_seconds_total{{phase=\"decide\"}} {:.6f}\n"
                     "nvlslice_cycle_phase_seconds_total{{phase=\"apply\"}} {:.6f}\n",
                     phase_sum_.load, phase_sum_.decide, phase_sum_.apply);
    counter("nvlslice_actions_total", "Requests made to slurmctld (holds, pins, releases, records, ...).",
            double(phase_sum_.actions));
    o += fmt::format("# HELP nvlslice_cycle_max_seconds Duration of the longest reconcile cycle since the start.\n"
                     "# TYPE nvlslice_cycle_max_seconds gauge\nnvlslice_cycle_max_seconds {:.6f}\n",
                     cycle_max_);
    return o;
}

MetricsServer::MetricsServer(const Metrics& m, const ListenAddress& listen, Warn warn)
    : metrics_(m), listen_(listen), warn_(std::move(warn)), host_(listen.host) {
    in_addr probe{};
    if (inet_pton(AF_INET, listen.host.c_str(), &probe) != 1)
        throw Error(
            fmt::format("metrics_listen={}: {} is not an IPv4 address (use 127.0.0.1)", listen.str(), listen.host));
    try_bind();
    thread_ = std::thread([this] { serve(); });
}

bool MetricsServer::try_bind() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(listen_.port);
    inet_pton(AF_INET, listen_.host.c_str(), &a.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) {
        const std::string e = std::strerror(errno);
        if (fd >= 0) close(fd);
        if (e != last_bind_error_ && warn_)
            warn_(fmt::format("metrics_listen={}: {}: no metrics until it can listen there (tried every {} s)",
                              listen_.str(), e, kRetryBind.count() / 1000));
        last_bind_error_ = e;
        return false;
    }
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    fd_ = fd;
    if (!last_bind_error_.empty() && warn_) warn_(fmt::format("metrics_listen={}: listening now", listen_.str()));
    last_bind_error_.clear();
    port_ = ntohs(a.sin_port);
    return true;
}

MetricsServer::~MetricsServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) close(fd_);
}

namespace {

// One client of the endpoint: its request as read so far, then the answer
// as written so far. Nothing on its socket blocks (non-blocking, and
// MSG_NOSIGNAL: a client gone away is an error return, never SIGPIPE).
struct Client {
    int fd = -1;
    uint32_t source = 0; // its IPv4 address
    std::string in, out;
    size_t sent = 0;
    bool answering = false;
    std::chrono::steady_clock::time_point deadline;
};

std::string answer(const Metrics& m, http::Verdict v) {
    const int code = http::status_code(v);
    std::string body = code == 200 ? m.render() : fmt::format("{} {}\n", code, http::status_text(v));
    std::string head = fmt::format("HTTP/1.0 {} {}\r\nContent-Type: text/plain; version=0.0.4\r\n"
                                   "Content-Length: {}\r\nConnection: close\r\n",
                                   code, http::status_text(v), body.size());
    if (v == http::Verdict::BadMethod) head += "Allow: GET, HEAD\r\n";
    head += "\r\n";
    return v == http::Verdict::MetricsHead ? head : head + body;
}

// Whom to let go when the newest client (the last) has come: nobody
// (clients.end()) while the server holds at most `max_total` and its
// source at most `max_per_source`; else the oldest silent client of its
// source when that source is over its share, or of the source holding the
// most when the server is full; the newcomer itself when none of those
// is silent.
std::vector<Client>::iterator to_let_go(std::vector<Client>& clients, size_t max_total, size_t max_per_source) {
    std::map<uint32_t, size_t> per;
    for (const auto& c : clients) ++per[c.source];
    const uint32_t source = clients.back().source;
    uint32_t from = source;
    if (per[source] <= max_per_source) {
        if (clients.size() <= max_total) return clients.end();
        from = std::max_element(per.begin(), per.end(), [](const auto& x, const auto& y) {
                   return x.second < y.second;
               })->first;
    }
    auto it =
        std::find_if(clients.begin(), clients.end(), [&](const Client& x) { return x.source == from && !x.answering; });
    return it != clients.end() ? it : std::prev(clients.end());
}

} // namespace

void MetricsServer::serve() {
    using clock = std::chrono::steady_clock;
    std::vector<Client> clients;
    std::vector<pollfd> fds;
    clock::time_point next_bind = clock::now() + kRetryBind, accept_from{};
    while (!stop_) {
        if (fd_ < 0 && clock::now() >= next_bind) {
            try_bind();
            next_bind = clock::now() + kRetryBind;
        }
        fds.clear();
        // (a negative fd is skipped by poll: not bound yet, or accepts paused)
        fds.push_back({fd_ >= 0 && clock::now() >= accept_from ? fd_ : -1, POLLIN, 0});
        for (const auto& c : clients) fds.push_back({c.fd, short(c.answering ? POLLOUT : POLLIN), 0});
        if (poll(fds.data(), fds.size(), 200) < 0 && errno != EINTR) continue;
        const auto now = clock::now();
        for (size_t i = 0; i < clients.size(); ++i) {
            Client& c = clients[i];
            const short ev = fds[i + 1].revents;
            bool done = false;
            if (!c.answering && (ev & (POLLIN | POLLHUP | POLLERR))) {
                char buf[2048];
                const ssize_t n = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
                if (n > 0) c.in.append(buf, size_t(n));
                const bool closed = n == 0;
                if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                    done = true; // reset by the client: nothing to answer
                } else {
                    const http::Verdict v = http::judge_request(c.in, closed);
                    if (v != http::Verdict::Incomplete) {
                        c.out = answer(metrics_, v);
                        c.answering = true;
                    }
                }
            }
            if (!done && !c.answering && now >= c.deadline) {
                // slow or silent: answer what it sent, or let it go
                if (c.in.empty()) {
                    done = true;
                } else {
                    c.out = answer(metrics_, http::judge_request(c.in, true));
                    c.answering = true;
                    c.deadline = now + kClientTimeout;
                }
            }
            if (!done && c.answering) {
                const ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n > 0) c.sent += size_t(n);
                if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) done = true;
                if (c.sent == c.out.size() || now >= c.deadline) done = true;
            }
            if (done) {
                close(c.fd);
                c.fd = -1;
            }
        }
        clients.erase(std::remove_if(clients.begin(), clients.end(), [](const Client& c) { return c.fd < 0; }),
                      clients.end());
        for (; fds[0].fd >= 0;) {
            sockaddr_in peer{};
            socklen_t len = sizeof peer;
            const int c = accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (c < 0) {
                // Out of descriptors or memory: the connection stays in the
                // backlog and the socket readable; poll would return at once
                // for ever. Accepts pause instead.
                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                    accept_from = clock::now() + kAcceptPause;
                break;
            }
            Client cl;
            cl.fd = c;
            cl.source = len >= sizeof peer ? peer.sin_addr.s_addr : 0;
            cl.deadline = clock::now() + kClientTimeout;
            clients.push_back(std::move(cl));
            // Full, or its source over its share: a silent client makes
            // room (to_let_go), so that idle connections, and a burst from
            // one host, cannot keep another's scraper out.
            auto gone = to_let_go(clients, kMaxClients, kMaxPerSource);
            if (gone == clients.end()) continue;
            close(gone->fd);
            clients.erase(gone);
        }
    }
    for (const auto& c : clients) close(c.fd);
}

} // namespace nvl
