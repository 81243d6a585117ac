// nvlslice — one nvlsliced acts at a time, whatever hosts run one: a lease
// held in Slurm itself.
//
// Two helpers acting on the same jobs would fight (each would requeue,
// pin and release what the other did). Each controller host may run one
// (its lock file is per host), and nothing stops an admin from starting a
// second one elsewhere. The one that acts holds the lease: a reservation
// both see through slurmctld (`nvlslice_lease` by default) that holds
// nothing but a license of its own (slurm.conf: Licenses=nvlslice_lease:1,
// flags ANY_NODES: no node, no job asks for that license), with the
// holder's id in its Features, and an end time the holder moves on. The
// id is the host and the lock file: the lock lets one helper per host
// (and lock file) run, so a helper restarted there takes its predecessor's
// lease at once (that one is gone: the lock was free).
//
// The rules, each from Slurm's own guarantees:
//  * taking it is creating it: slurmctld refuses a second reservation of
//    the same name (and a second one of the license), under its write
//    lock, so of two helpers that create at once one wins;
//  * nobody deletes a lease: slurmctld purges a reservation past its end
//    by itself (about 30 s later), and only then can another helper take
//    it; a helper that deleted and created would race another doing the
//    same;
//  * the holder renews it (moves its end to now + length) once a third of
//    it is gone, and reads it back: the id must still be its own;
//  * the holder acts only while its own clock says the lease has more than
//    half of its length left since its last renewal was sent: a helper
//    that stalls (a long RPC, a paused VM) stops acting before anyone
//    else can take over, as long as the hosts' clocks agree within that
//    half (the lease end is written by the holder's clock and purged by
//    slurmctld's);
//  * a standby takes over only after the lease is gone from Slurm: a
//    dead holder's lease ends `length` after its last renewal, and is
//    purged about 30 s later.
// With a backup slurmctld, the reservation is in the state both
// controllers share (saved within 5 s of a change); a holder's renewals go
// to whichever controller is in control.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nvl {

// The lease reservation as this cycle read it (nullopt: there is none).
struct LeaseView {
    std::string holder;   // the id it carries
    int64_t end_time = 0; // its end (epoch seconds)
};

enum class LeaseStep {
    Take,    // create it (there is none)
    Renew,   // ours, a third of it gone: move its end on
    Keep,    // ours, nothing to do now
    StandBy, // another helper's (or ours, lost): wait
};

struct LeaseDecision {
    LeaseStep step = LeaseStep::StandBy;
    bool active = false; // may act this cycle (after the step, if any, succeeded)
    std::string why;     // for the log, when the role changes
};

class Lease {
  public:
    // `me`: this helper's id (lease_id()); `length_s`: the lease's length.
    Lease(std::string me, int64_t length_s);

    // What to do from this cycle's view; `now` wall seconds, `mono` this
    // host's monotonic seconds.
    LeaseDecision decide(const std::optional<LeaseView>& view, int64_t now, double mono) const;
    // The step's outcome: `sent` is when its request was sent (monotonic);
    // `ok`: Slurm took it (and, for a renewal, the lease read back ours).
    void taken(bool ok, double sent);
    void renewed(bool ok, double sent);
    // Lost (read back another's, or it is gone): stop acting at once.
    void lost();
    // Whether this helper may act now, by its own clock.
    bool may_act(double mono) const;
    // The end to give the lease when taking or renewing it at `now`.
    int64_t end_for(int64_t now) const { return now + length_s_; }
    const std::string& me() const { return me_; }
    int64_t length_s() const { return length_s_; }

  private:
    std::string me_;
    int64_t length_s_;
    std::optional<double> valid_from_; // when the last successful take or renewal was sent
};

// A helper's id: "host:lock_file" (what the reservation carries), with
// anything but [A-Za-z0-9._/-] replaced.
std::string lease_id(std::string_view host, std::string_view lock_file);

} // namespace nvl
