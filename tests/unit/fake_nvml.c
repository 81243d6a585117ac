/* A stand-in for the NVIDIA driver's libnvidia-ml.so.1 for the unit tests:
 * the few NVML entry points nvlslice's fabric reader looks up, answering for
 * four GPUs of one NVL72 rack. GPU 2 reports a degraded bandwidth, GPU 3
 * is still joining its domain; FAKE_NVML_HANG=1 makes it hang. The fabric info struct is version 2
 * (nvml.h: nvmlGpuFabricInfo_v2_t). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    unsigned int version;
    unsigned char clusterUuid[16];
    int status;
    unsigned int cliqueId;
    unsigned char state;
    unsigned int healthMask;
} fake_fabric_info_v2;

static int initialized;

/* FAKE_NVML_HANG=1: the driver never answers, as with a wedged GPU. */
int nvmlInit_v2(void) {
    const char* hang = getenv("FAKE_NVML_HANG");
    if (hang && *hang == '1')
        for (;;) pause();
    initialized = 1;
    return 0;
}
int nvmlShutdown(void) {
    initialized = 0;
    return 0;
}
const char* nvmlErrorString(int rc) {
    return rc == 2 ? "Invalid Argument" : "Unknown Error";
}

int nvmlDeviceGetCount_v2(unsigned int* n) {
    if (!initialized) return 1; /* NVML_ERROR_UNINITIALIZED */
    *n = 4;
    return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void** dev) {
    if (i >= 4) return 2;
    *dev = (void*)(unsigned long)(i + 1);
    return 0;
}

int nvmlDeviceGetGpuFabricInfoV(void* dev, fake_fabric_info_v2* info) {
    static const unsigned char uuid[16] = {0x5d, 0x0e, 0x7c, 0x2a, 0x8b, 0x41, 0x4f, 0x63,
                                           0xa9, 0xd2, 0x1c, 0x7b, 0x3e, 0x90, 0xf4, 0xa1};
    unsigned int i = (unsigned int)(unsigned long)dev - 1;
    if (info->version != (sizeof(fake_fabric_info_v2) | (2u << 24))) return 2; /* wrong struct version */
    memcpy(info->clusterUuid, uuid, 16);
    info->status = 0;
    info->cliqueId = 32766;
    info->state = i == 3 ? 2 : 3; /* In Progress : Completed */
    /* degraded bandwidth false, route recovery false, route unhealthy false,
     * access timeout recovery false, configuration correct; GPU 2: degraded */
    info->healthMask = (2u << 0 | 2u << 2 | 2u << 4 | 2u << 6 | 1u << 8);
    if (i == 2) info->healthMask = (info->healthMask & ~3u) | 1u;
    return 0;
}
