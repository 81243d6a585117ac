// nvlsliced's own probe of the slurmds (src/nvlsliced/probe.hpp), against
// sockets of this test on the loopback: answered, refused, silent.
#include "probe.hpp"

#include "catch.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <poll.h>

using namespace nvl;

namespace {
// A listening socket on 127.0.0.1 (its port), or a port that was bound
// and closed again (nothing listens: refused).
struct Listener {
    int fd = -1;
    uint16_t port = 0;
    explicit Listener(bool listen_too = true, int backlog = 4096) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        REQUIRE(fd >= 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        socklen_t len = sizeof a;
        REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
        port = ntohs(a.sin_port);
        if (listen_too)
            REQUIRE(listen(fd, backlog) == 0);
        else
            close_now();
    }
    void close_now() {
        if (fd >= 0) close(fd);
        fd = -1;
    }
    ~Listener() { close_now(); }
    Listener(const Listener&) = delete;
    Listener& operator=(const Listener&) = delete;
};
} // namespace

TEST_CASE("probe: a listening slurmd answers, a dead one refuses, an address nothing answers times out",
          "[probe][quick]") {
    Listener up;
    Listener gone(false);
    // a silent one: a listener that accepts nothing with its accept queue
    // full, so that the kernel drops a new connection's SYN (no reset), as
    // a node that is gone drops it
    Listener silent(true, 0);
    // (non-blocking: a filler whose own SYN is dropped would otherwise wait
    // out the kernel's SYN retries, two minutes, in connect(); the first
    // is awaited until its handshake is done and it fills the queue)
    std::vector<int> fillers;
    for (int i = 0; i < 2; ++i) {
        int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(silent.port);
        (void)connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a);
        if (i == 0) {
            pollfd p{c, POLLOUT, 0};
            (void)poll(&p, 1, 1000);
        }
        fillers.push_back(c);
    }
    std::unordered_map<std::string, sockaddr_storage> cache;
    const std::vector<ProbeTarget> t{{"n001", "127.0.0.1", up.port},
                                     {"n002", "127.0.0.1", gone.port},
                                     {"n003", "127.0.0.1", silent.port},
                                     {"n004", "::1", gone.port}};
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = probe_round(t, 300, cache);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    REQUIRE(r.size() == 4);
    CHECK(r[0] == ProbeResult::Answered);
    CHECK(r[1] == ProbeResult::Refused);
    CHECK(r[2] == ProbeResult::TimedOut);
    CHECK(r[3] != ProbeResult::Answered); // refused where the host has IPv6, unreachable where not
    CHECK(took < 1.0);                    // the round waits its timeout, no longer
    CHECK(cache.count("127.0.0.1"));      // resolved once
    // a batch larger than one poll set: every one answered (accepted as it
    // comes, whatever the host's accept queue limit)
    Listener wide;
    std::atomic<bool> done{false};
    std::thread acceptor([&] {
        while (!done) {
            pollfd p{wide.fd, POLLIN, 0};
            if (poll(&p, 1, 20) > 0) {
                int c = accept(wide.fd, nullptr, nullptr);
                if (c >= 0) close(c);
            }
        }
    });
    std::vector<ProbeTarget> many(600, ProbeTarget{"n", "127.0.0.1", wide.port});
    int answered = 0;
    for (auto x : probe_round(many, 2000, cache)) answered += x == ProbeResult::Answered;
    done = true;
    acceptor.join();
    CHECK(answered == 600);
    for (int c : fillers) close(c);
}

TEST_CASE("probe: the thread counts how long a node has gone unanswered, from its last answer", "[probe][quick]") {
    Listener up;
    SlurmdProbe p(50, 50);
    p.set_targets({{"n001", "127.0.0.1", up.port}});
    auto wait_until = [&](auto&& ok) {
        for (int i = 0; i < 100; ++i) {
            if (ok()) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    };
    CHECK(wait_until([&] {
        auto u = p.unanswered();
        return u.count("n001") && u.at("n001").s == 0;
    }));
    up.close_now(); // slurmd gone: refused from now on
    CHECK(wait_until([&] {
        auto u = p.unanswered();
        return u.count("n001") && u.at("n001").s >= 1 && u.at("n001").refused;
    }));
    // no longer a target: forgotten
    p.set_targets({});
    CHECK(wait_until([&] { return p.unanswered().empty(); }));
    CHECK(p.cost().rounds > 0);
    CHECK(p.cost().probes > 0);
}
