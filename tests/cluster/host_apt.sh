# shellcheck shell=bash
# Sourced: apt-get on the host, waiting out another apt that holds its
# locks. The test command builds the Debian roots in the background while
# the 22.05 tier installs its daemons, and both may need the host's apt at
# once (debootstrap, slurmctld); a fresh machine's daily apt timer may hold
# the locks too. Retries for up to NVL_APT_WAIT seconds (600), then fails
# with apt's own message.
host_apt() {
    local start=$SECONDS limit=${NVL_APT_WAIT:-600} err
    while :; do
        err=$(DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=10 "$@" 2>&1 >/dev/null) && return 0
        case "$err" in
        *"Could not get lock"* | *"Unable to lock"* | *"Could not open lock"*)
            if [ $((SECONDS - start)) -ge "$limit" ]; then
                printf '%s\n(waited %s s for another apt to finish)\n' "$err" $((SECONDS - start)) >&2
                return 1
            fi
            sleep 5 ;;
        *) printf '%s\n' "$err" >&2; return 1 ;;
        esac
    done
}
