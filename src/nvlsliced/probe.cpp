#include "probe.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace nvl {

namespace {

constexpr size_t kBatch = 256; // descriptors in flight at once (well under a default RLIMIT_NOFILE of 1024)

bool resolve(const std::string& addr, sockaddr_storage& out) {
    std::memset(&out, 0, sizeof out);
    auto* v4 = reinterpret_cast<sockaddr_in*>(&out);
    if (inet_pton(AF_INET, addr.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        return true;
    }
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&out);
    if (inet_pton(AF_INET6, addr.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        return true;
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(addr.c_str(), nullptr, &hints, &res) != 0 || !res) return false;
    std::memcpy(&out, res->ai_addr, std::min<size_t>(res->ai_addrlen, sizeof out));
    freeaddrinfo(res);
    return true;
}

// Closed with a reset: no TIME_WAIT left behind (thousands of probes a
// second would otherwise use up the local ports).
void close_reset(int fd) {
    linger l{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(fd);
}

ProbeResult of_error(int e) {
    if (e == 0) return ProbeResult::Answered;
    if (e == ECONNREFUSED) return ProbeResult::Refused;
    return ProbeResult::TimedOut; // unreachable, reset on the way: no slurmd answered
}

} // namespace

std::vector<ProbeResult> probe_round(const std::vector<ProbeTarget>& targets, int timeout_ms,
                                     std::unordered_map<std::string, sockaddr_storage>& cache) {
    std::vector<ProbeResult> out(targets.size(), ProbeResult::TimedOut);
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    fds.reserve(kBatch);
    which.reserve(kBatch);
    for (size_t start = 0; start < targets.size(); start += kBatch) {
        const size_t end = std::min(targets.size(), start + kBatch);
        fds.clear();
        which.clear();
        for (size_t i = start; i < end; ++i) {
            const ProbeTarget& t = targets[i];
            auto it = cache.find(t.addr);
            if (it == cache.end()) {
                sockaddr_storage a;
                if (!resolve(t.addr, a)) {
                    out[i] = ProbeResult::Unresolved; // looked up again next round
                    continue;
                }
                it = cache.emplace(t.addr, a).first;
            }
            sockaddr_storage a = it->second;
            socklen_t len = 0;
            if (a.ss_family == AF_INET) {
                reinterpret_cast<sockaddr_in*>(&a)->sin_port = htons(t.port);
                len = sizeof(sockaddr_in);
            } else {
                reinterpret_cast<sockaddr_in6*>(&a)->sin6_port = htons(t.port);
                len = sizeof(sockaddr_in6);
            }
            const int fd = socket(a.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd < 0) continue; // out of descriptors: this node is not judged this round (TimedOut stays)
            if (connect(fd, reinterpret_cast<const sockaddr*>(&a), len) == 0) {
                out[i] = ProbeResult::Answered;
                close_reset(fd);
                continue;
            }
            if (errno != EINPROGRESS) {
                out[i] = of_error(errno);
                close(fd);
                continue;
            }
            fds.push_back({fd, POLLOUT, 0});
            which.push_back(i);
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        size_t open = fds.size();
        while (open > 0) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
                    .count();
            if (left <= 0) break;
            const int n = poll(fds.data(), fds.size(), int(left));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            for (size_t k = 0; k < fds.size(); ++k) {
                if (fds[k].fd < 0 || fds[k].revents == 0) continue;
                int err = 0;
                socklen_t el = sizeof err;
                if (getsockopt(fds[k].fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0) err = errno;
                out[which[k]] = of_error(err);
                close_reset(fds[k].fd);
                fds[k].fd = -1; // poll skips it
                --open;
            }
        }
        for (auto& p : fds)
            if (p.fd >= 0) close_reset(p.fd); // still connecting at the deadline: TimedOut
    }
    return out;
}

SlurmdProbe::SlurmdProbe(int interval_ms, int timeout_ms)
    : interval_ms_(interval_ms), timeout_ms_(timeout_ms), pace_ms_(interval_ms), thread_([this] { run(); }) {}

SlurmdProbe::~SlurmdProbe() {
    {
        std::lock_guard<std::mutex> g(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void SlurmdProbe::set_targets(std::vector<ProbeTarget> targets) {
    std::lock_guard<std::mutex> g(mu_);
    targets_ = std::move(targets);
}

std::unordered_map<std::string, SlurmdProbe::Silence> SlurmdProbe::unanswered() const {
    const auto now = Clock::now();
    std::lock_guard<std::mutex> g(mu_);
    std::unordered_map<std::string, Silence> out;
    out.reserve(seen_.size());
    for (const auto& [name, s] : seen_)
        out.emplace(name, s.fails < 2
                              ? Silence{}
                              : Silence{std::chrono::duration_cast<std::chrono::seconds>(now - s.first_fail).count(),
                                        s.refused});
    return out;
}

int64_t SlurmdProbe::pace_ms() const {
    std::lock_guard<std::mutex> g(mu_);
    return pace_ms_;
}

SlurmdProbe::Cost SlurmdProbe::cost() const {
    std::lock_guard<std::mutex> g(mu_);
    return cost_;
}

void SlurmdProbe::run() {
    std::unordered_map<std::string, sockaddr_storage> cache;
    std::vector<ProbeTarget> targets;
    for (;;) {
        const auto start = Clock::now();
        {
            std::lock_guard<std::mutex> g(mu_);
            if (stop_) return;
            targets = targets_;
        }
        timespec c0{}, c1{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        const std::vector<ProbeResult> r = probe_round(targets, timeout_ms_, cache);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        const double cpu_s = double(c1.tv_sec - c0.tv_sec) + double(c1.tv_nsec - c0.tv_nsec) / 1e9;
        {
            std::lock_guard<std::mutex> g(mu_);
            // a node no longer probed is forgotten; an unanswered probe
            // starts or extends its run, an answer ends it
            std::unordered_map<std::string, Seen> next;
            next.reserve(targets.size());
            for (size_t i = 0; i < targets.size(); ++i) {
                auto it = seen_.find(targets[i].name);
                Seen s = it == seen_.end() ? Seen{} : it->second;
                if (r[i] == ProbeResult::Answered) {
                    s = Seen{};
                } else {
                    if (s.fails++ == 0) s.first_fail = start;
                    s.refused = r[i] == ProbeResult::Refused;
                }
                next.emplace(targets[i].name, s);
            }
            seen_.swap(next);
            cost_.rounds += 1;
            cost_.probes += targets.size();
            cost_.cpu_s += cpu_s;
            pace_ms_ = std::max<int64_t>(interval_ms_, int64_t(cpu_s * 1000.0 * 10.0));
        }
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait_until(lk, start + std::chrono::milliseconds(pace_ms_), [&] { return stop_; });
        if (stop_) return;
    }
}

} // namespace nvl
