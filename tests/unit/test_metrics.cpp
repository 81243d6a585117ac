// nvlsliced's metrics endpoint: what it answers, and that no client can stop
// it (a reset connection, a silent one, many at once). The server runs in
// this process, which does not ignore SIGPIPE: a write into a reset socket
// without MSG_NOSIGNAL would end the test run.
#include "helper_config.hpp"
#include "http_request.hpp"
#include "metrics.hpp"

#include "catch.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mutex>
#include <vector>

#include <chrono>
#include <string>

using namespace nvl;
using http::judge_request;
using http::Verdict;

namespace {

// from = the source address (any 127.x.y.z: the whole of 127/8 is this host)
int connect_to(int port, const char* from = nullptr) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    if (from) {
        sockaddr_in src{};
        src.sin_family = AF_INET;
        inet_pton(AF_INET, from, &src.sin_addr);
        REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) == 0);
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    return fd;
}

// Closes with a TCP reset instead of a FIN, as a scraper that timed out may.
void reset(int fd) {
    linger l{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(fd);
}

// The rest of the request on a connection open already, and the answer.
std::string finish(int fd, const std::string& request) {
    (void)!send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    std::string out;
    char buf[4096];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 3000) <= 0) break;
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, size_t(n));
    }
    close(fd);
    return out;
}

std::string get(int port, const std::string& request) {
    return finish(connect_to(port), request);
}

} // namespace

TEST_CASE("the metrics request line is judged from its bytes", "[metrics][quick]") {
    CHECK(judge_request("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n") == Verdict::Metrics);
    CHECK(judge_request("GET / HTTP/1.0\r\n\r\n") == Verdict::Metrics);
    CHECK(judge_request("GET /metrics?x=1 HTTP/1.0\n\n") == Verdict::Metrics);
    CHECK(judge_request("HEAD /metrics HTTP/1.0\r\n\r\n") == Verdict::MetricsHead);
    CHECK(judge_request("GET /metrics HTTP/1.1\r\nHost: x\r\n") == Verdict::Incomplete);
    CHECK(judge_request("GET /metrics HTTP/1.1\r\nHost: x\r\n", /*closed=*/true) == Verdict::Metrics);
    CHECK(judge_request("GET /metrics", true) == Verdict::Metrics);
    CHECK(judge_request("", true) == Verdict::BadRequest);
    CHECK(judge_request("POST /metrics HTTP/1.0\r\n\r\n") == Verdict::BadMethod);
    CHECK(judge_request("GET /other HTTP/1.0\r\n\r\n") == Verdict::NotFound);
    CHECK(judge_request("GET metrics HTTP/1.0\r\n\r\n") == Verdict::BadRequest);
    CHECK(judge_request("GET /metrics SPDY/1\r\n\r\n") == Verdict::BadRequest);
    CHECK(judge_request("G\x01T /metrics HTTP/1.0\r\n\r\n") == Verdict::BadRequest);
    CHECK(judge_request(std::string(http::kMaxRequest, 'A')) == Verdict::TooLarge);
    CHECK(judge_request("GET /" + std::string(http::kMaxRequest, 'a') + " HTTP/1.0\r\n") == Verdict::TooLarge);
}

TEST_CASE("metrics_listen is checked where it is read", "[metrics][quick]") {
    CHECK(parse_listen("127.0.0.1:9817").port == 9817);
    CHECK(parse_listen("0.0.0.0:0").host == "0.0.0.0");
    CHECK_THROWS_WITH(parse_listen("127.0.0.1:98170"), Catch::Contains("not a number from 0 to 65535"));
    CHECK_THROWS_WITH(parse_listen("127.0.0.1:x"), Catch::Contains("metrics_listen"));
    CHECK_THROWS_WITH(parse_listen("9817"), Catch::Contains("expected IPV4-ADDRESS:PORT"));
    CHECK_THROWS_WITH(parse_listen("localhost:9817"), Catch::Contains("not an IPv4 address"));
    CHECK_THROWS_WITH(read_helper_config("map: m.yaml\nmetrics_listen: 127.0.0.1:port\n", "h.yaml"),
                      Catch::Contains("h.yaml:2"));
}

TEST_CASE("no client stops the metrics endpoint: a reset, a silent one, a wrong request", "[metrics][quick]") {
    Metrics m;
    m.set_racks({"rack01"});
    MetricsServer server(m, parse_listen("127.0.0.1:0"));
    const int port = server.port();
    REQUIRE(port > 0);
    CHECK(server.host() == "127.0.0.1");

    // connects and resets without a word (before the fix: SIGPIPE)
    reset(connect_to(port));
    // sends a request and resets before reading the answer
    for (int i = 0; i < 5; ++i) {
        int fd = connect_to(port);
        const std::string req = "GET /metrics HTTP/1.0\r\n\r\n";
        (void)!send(fd, req.data(), req.size(), MSG_NOSIGNAL);
        reset(fd);
    }
    // one that says nothing and stays: the others are still served at once
    int silent = connect_to(port);
    const auto t0 = std::chrono::steady_clock::now();
    std::string ok = get(port, "GET /metrics HTTP/1.0\r\n\r\n");
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(ok.rfind("HTTP/1.0 200 OK\r\n", 0) == 0);
    CHECK(ok.find("nvlslice_cycle_seconds_count 0") != std::string::npos);
    CHECK(secs < 1.0);
    CHECK(get(port, "HEAD /metrics HTTP/1.0\r\n\r\n").find("nvlslice_") == std::string::npos);
    CHECK(get(port, "GET /x HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 404 ", 0) == 0);
    CHECK(get(port, "DELETE /metrics HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 405 ", 0) == 0);
    close(silent);
    // more clients than it serves at once: the extra ones wait their turn
    int many[MetricsServer::kMaxClients + 4];
    for (int& fd : many) fd = connect_to(port);
    CHECK(get(port, "GET /metrics HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 200 OK", 0) == 0);
    for (int fd : many) reset(fd);
    CHECK(get(port, "GET /metrics HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 200 OK", 0) == 0);
}

TEST_CASE("a burst of connections from one host does not push out another's scraper", "[metrics][quick]") {
    Metrics m;
    MetricsServer server(m, parse_listen("127.0.0.1:0"));
    const int port = server.port();
    REQUIRE(port > 0);
    // the scraper has connected and sent half its request
    int scraper = connect_to(port, "127.0.0.2");
    (void)!send(scraper, "GET /met", 8, MSG_NOSIGNAL);
    // a burst from another host, silent, many more than the server holds
    std::vector<int> burst;
    for (size_t i = 0; i < 3 * MetricsServer::kMaxClients; ++i) burst.push_back(connect_to(port, "127.0.0.3"));
    // (the server accepts them: give its thread a moment)
    poll(nullptr, 0, 300);
    CHECK(finish(scraper, "rics HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 200 OK", 0) == 0);
    for (int fd : burst) close(fd);
    CHECK(get(port, "GET /metrics HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 200 OK", 0) == 0);
}

TEST_CASE("a metrics port taken when the helper starts is not fatal: it listens once the port is free",
          "[metrics][quick]") {
    // another process holds the port
    int holder = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(holder >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(holder, 4) == 0);
    socklen_t len = sizeof a;
    getsockname(holder, reinterpret_cast<sockaddr*>(&a), &len);
    const int port = ntohs(a.sin_port);
    std::vector<std::string> warned;
    std::mutex mu;
    Metrics m;
    MetricsServer server(m, parse_listen("127.0.0.1:" + std::to_string(port)), [&](const std::string& w) {
        std::lock_guard<std::mutex> l(mu);
        warned.push_back(w);
    });
    CHECK(server.port() == 0);
    {
        std::lock_guard<std::mutex> l(mu);
        REQUIRE(warned.size() == 1);
        CHECK_THAT(warned[0], Catch::Contains("Address already in use") && Catch::Contains("no metrics until"));
    }
    close(holder);
    const auto deadline = std::chrono::steady_clock::now() + 2 * MetricsServer::kRetryBind + std::chrono::seconds(1);
    while (server.port() == 0 && std::chrono::steady_clock::now() < deadline) poll(nullptr, 0, 50);
    REQUIRE(server.port() == port);
    CHECK(get(port, "GET /metrics HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 200 OK", 0) == 0);
    std::lock_guard<std::mutex> l(mu);
    CHECK(warned.size() == 2); // said once taken, once listening
    CHECK_THAT(warned.back(), Catch::Contains("listening now"));
}

TEST_CASE("out of descriptors, the metrics server pauses its accepts instead of spinning", "[metrics][quick]") {
    // In a child process of its own: its descriptor limit is lowered so
    // that accept fails with EMFILE while connections wait in the backlog.
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int code = 1;
        try {
            Metrics m;
            MetricsServer server(m, parse_listen("127.0.0.1:0"));
            const int port = server.port();
            // the clients' sockets made first; then no descriptor is left,
            // and their connections wait in the backlog: accept fails (EMFILE)
            std::vector<int> clients;
            for (int i = 0; i < 4; ++i) clients.push_back(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
            int highest = 0;
            for (int fd = 0; fd < 4096; ++fd)
                if (fcntl(fd, F_GETFD) != -1) highest = fd;
            rlimit lim{rlim_t(highest + 1), rlim_t(highest + 1)};
            if (setrlimit(RLIMIT_NOFILE, &lim) != 0) _exit(4);
            while (open("/dev/null", O_RDONLY | O_CLOEXEC) >= 0) {} // the gaps below it too
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(uint16_t(port));
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            for (int fd : clients)
                if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) _exit(5);
            poll(nullptr, 0, 300);
            rusage before{}, after{};
            getrusage(RUSAGE_SELF, &before);
            poll(nullptr, 0, 1000);
            getrusage(RUSAGE_SELF, &after);
            auto cpu = [](const rusage& r) {
                return double(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
                       double(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
            };
            // a spinning accept loop burns the whole second
            code = cpu(after) - cpu(before) < 0.3 ? 0 : 2;
        } catch (...) {
            code = 3;
        }
        _exit(code);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}
