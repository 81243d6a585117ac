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
#include <unistd.h>

#include <chrono>
#include <string>

using namespace nvl;
using http::judge_request;
using http::Verdict;

namespace {

int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
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

std::string get(int port, const std::string& request) {
    int fd = connect_to(port);
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
