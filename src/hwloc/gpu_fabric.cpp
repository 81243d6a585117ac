#include "gpu_fabric.hpp"

#include "error.hpp"

#include <fmt/format.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

namespace nvl {
namespace {

// NVML's GPU fabric info, version 2 (nvml.h: nvmlGpuFabricInfo_v2_t; the
// version word is sizeof | 2 << 24). Declared here so that nothing needs the
// CUDA headers at build time.
struct NvmlFabricInfoV2 {
    unsigned int version;
    unsigned char cluster_uuid[16];
    int status; // nvmlReturn_t
    unsigned int clique_id;
    unsigned char state; // nvmlGpuFabricState_t
    unsigned int health_mask;
};
static_assert(sizeof(NvmlFabricInfoV2) == 36, "nvmlGpuFabricInfo_v2_t is 36 bytes");
constexpr unsigned int kFabricInfoV2 = unsigned(sizeof(NvmlFabricInfoV2)) | (2u << 24);

using NvmlDevice = void*;
using InitFn = int (*)();
using CountFn = int (*)(unsigned int*);
using HandleFn = int (*)(unsigned int, NvmlDevice*);
using FabricFn = int (*)(NvmlDevice, NvmlFabricInfoV2*);
using ErrorStringFn = const char* (*)(int);

constexpr int kNvmlSuccess = 0;
constexpr int kNvmlNotSupported = 3;

class Library {
  public:
    explicit Library(const std::string& path) : h_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {}
    ~Library() {
        if (h_) dlclose(h_);
    }
    Library(const Library&) = delete;
    Library& operator=(const Library&) = delete;
    explicit operator bool() const { return h_ != nullptr; }
    template <class F> F sym(const char* name) const { return reinterpret_cast<F>(dlsym(h_, name)); }

  private:
    void* h_;
};

bool read_nvml(const std::string& library, LocalFabric& out, std::string& why) {
    Library lib(library);
    if (!lib) {
        const char* e = dlerror();
        why = fmt::format("NVML not loadable ({})", e ? e : library);
        return false;
    }
    auto init = lib.sym<InitFn>("nvmlInit_v2");
    auto shutdown = lib.sym<InitFn>("nvmlShutdown");
    auto count = lib.sym<CountFn>("nvmlDeviceGetCount_v2");
    auto handle = lib.sym<HandleFn>("nvmlDeviceGetHandleByIndex_v2");
    auto fabric = lib.sym<FabricFn>("nvmlDeviceGetGpuFabricInfoV");
    auto error_string = lib.sym<ErrorStringFn>("nvmlErrorString");
    if (!init || !shutdown || !count || !handle) {
        why = fmt::format("{} lacks nvmlInit_v2/nvmlDeviceGetCount_v2", library);
        return false;
    }
    if (!fabric) {
        why = fmt::format("{} has no nvmlDeviceGetGpuFabricInfoV (driver older than the NVLink fabric API)", library);
        return false;
    }
    auto err = [&](int rc) { return error_string ? std::string(error_string(rc)) : fmt::format("NVML error {}", rc); };
    if (int rc = init(); rc != kNvmlSuccess) {
        why = fmt::format("nvmlInit: {}", err(rc));
        return false;
    }
    unsigned int n = 0;
    int rc = count(&n);
    if (rc == kNvmlSuccess) {
        for (unsigned int i = 0; i < n; ++i) {
            GpuFabric g;
            NvmlDevice dev = nullptr;
            NvmlFabricInfoV2 info{};
            info.version = kFabricInfoV2;
            if (int r = handle(i, &dev); r != kNvmlSuccess) {
                g.state = "Unknown";
                g.status = fmt::format("nvmlDeviceGetHandleByIndex: {}", err(r));
            } else if (int r2 = fabric(dev, &info); r2 == kNvmlNotSupported) {
                g.state = "Not Supported";
                g.status = "N/A";
            } else if (r2 != kNvmlSuccess) {
                g.state = "Unknown";
                g.status = fmt::format("nvmlDeviceGetGpuFabricInfoV: {}", err(r2));
            } else {
                g.cluster_uuid = fabric_uuid_string(info.cluster_uuid);
                g.clique = std::to_string(info.clique_id);
                g.state = fabric_state_name(info.state);
                g.status = info.status == kNvmlSuccess ? "Success" : err(info.status);
                g.health = fabric_health_from_mask(info.health_mask);
            }
            out.gpus.push_back(std::move(g));
        }
    }
    shutdown();
    if (rc != kNvmlSuccess) {
        why = fmt::format("nvmlDeviceGetCount: {}", err(rc));
        return false;
    }
    out.source = "NVML";
    return true;
}

bool read_nvidia_smi(LocalFabric& out, std::string& why) {
    const char* smi = nullptr;
    for (const char* p : {"/usr/bin/nvidia-smi", "/usr/local/bin/nvidia-smi", "/bin/nvidia-smi"})
        if (access(p, X_OK) == 0) {
            smi = p;
            break;
        }
    if (!smi) {
        why = "no nvidia-smi";
        return false;
    }
    const std::string cmd = fmt::format("{} --query-gpu=fabric.clusterUuid,fabric.cliqueId,fabric.state,fabric.status "
                                        "--format=csv,noheader 2>&1",
                                        smi);
    FILE* f = popen(cmd.c_str(), "r");
    if (!f) {
        why = fmt::format("cannot run {}", smi);
        return false;
    }
    std::string text;
    char buf[4096];
    while (size_t k = fread(buf, 1, sizeof buf, f)) text.append(buf, k);
    const int status = pclose(f);
    if (status != 0) {
        std::string first = text.substr(0, text.find('\n'));
        why = fmt::format("{} exited with {}: {}", smi, WIFEXITED(status) ? WEXITSTATUS(status) : status, first);
        return false;
    }
    std::istringstream in(text);
    std::string line;
    try {
        while (std::getline(in, line))
            if (line.find_first_not_of(" \t\r") != std::string::npos) out.gpus.push_back(parse_gpu_fabric(line));
    } catch (const Error& e) {
        why = fmt::format("{}: {}", smi, e.what());
        out.gpus.clear();
        return false;
    }
    out.source = "nvidia-smi";
    return true;
}

} // namespace

LocalFabric read_local_fabric(const std::string& nvml_library) {
    LocalFabric out;
    std::string why_nvml, why_smi;
    try {
        if (read_nvml(nvml_library, out, why_nvml)) return out;
        out.gpus.clear();
        if (read_nvidia_smi(out, why_smi)) return out;
    } catch (const std::exception& e) {
        why_smi = e.what();
    }
    out.gpus.clear();
    out.source.clear();
    out.why_none = why_nvml + "; " + why_smi;
    return out;
}

namespace {

// The child's answer on the pipe, one field a line: tabs and newlines in
// values (never in what NVML or nvidia-smi report) become spaces.
std::string one_line(std::string s) {
    for (char& c : s)
        if (c == '\t' || c == '\n' || c == '\r') c = ' ';
    return s;
}

std::string encode(const LocalFabric& f) {
    std::string out = "source\t" + one_line(f.source) + "\nwhy\t" + one_line(f.why_none) + "\n";
    for (const auto& g : f.gpus)
        out += fmt::format("gpu\t{}\t{}\t{}\t{}\t{}\n", one_line(g.cluster_uuid), one_line(g.clique), one_line(g.state),
                           one_line(g.status), one_line(g.health));
    return out;
}

LocalFabric decode(const std::string& text) {
    LocalFabric f;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::vector<std::string> w;
        size_t at = 0;
        for (;;) {
            const size_t tab = line.find('\t', at);
            w.push_back(line.substr(at, tab == std::string::npos ? std::string::npos : tab - at));
            if (tab == std::string::npos) break;
            at = tab + 1;
        }
        if (w[0] == "source" && w.size() == 2)
            f.source = w[1];
        else if (w[0] == "why" && w.size() == 2)
            f.why_none = w[1];
        else if (w[0] == "gpu" && w.size() == 6)
            f.gpus.push_back({w[1], w[2], w[3], w[4], w[5]});
    }
    return f;
}

} // namespace

LocalFabric read_local_fabric_within(int timeout_ms, const std::string& nvml_library) {
    LocalFabric out;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        out.why_none = fmt::format("cannot make a pipe to read the GPUs: {}", std::strerror(errno));
        return out;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        out.why_none = fmt::format("cannot fork to read the GPUs: {}", std::strerror(errno));
        return out;
    }
    if (pid == 0) {
        close(fds[0]);
        const std::string text = encode(read_local_fabric(nvml_library));
        size_t done = 0;
        while (done < text.size()) {
            const ssize_t n = write(fds[1], text.data() + done, text.size() - done);
            if (n <= 0) break;
            done += size_t(n);
        }
        _exit(0);
    }
    close(fds[1]);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::string text;
    bool eof = false;
    while (!eof) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) break;
        pollfd p{fds[0], POLLIN, 0};
        const int r = poll(&p, 1, int(left));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        char buf[4096];
        const ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            eof = true;
        else
            text.append(buf, size_t(n));
    }
    close(fds[0]);
    if (!eof) {
        // Killed and left: a child stuck in the driver (uninterruptible)
        // may not die at once, and waiting for it would hang us as well.
        kill(pid, SIGKILL);
        (void)waitpid(pid, nullptr, WNOHANG);
        out.timed_out = true;
        out.why_none = fmt::format("the GPUs did not answer within {} ms (NVML or nvidia-smi hung: a wedged GPU or "
                                   "driver?)",
                                   timeout_ms);
        return out;
    }
    (void)waitpid(pid, nullptr, 0);
    return decode(text);
}

LocalFabric read_fabric_report(const std::string& path, const std::string& node) {
    std::ifstream f(path);
    if (!f) throw Error(fmt::format("fabric_report={}: cannot read the file", path));
    std::stringstream ss;
    ss << f.rdbuf();
    LocalFabric out;
    for (auto& n : parse_fabric_report(ss.str(), path))
        if (n.node == node) {
            out.source = path;
            out.gpus = std::move(n.gpus);
            return out;
        }
    out.why_none = fmt::format("{} is not in {}", node, path);
    return out;
}

} // namespace nvl
