#include "gpu_fabric.hpp"

#include "error.hpp"

#include <fmt/format.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
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
