#include "fixtures.hpp"
#include "slice_job.hpp"

#include "catch.hpp"

using namespace nvl;
using namespace nvl::test;

namespace {

SliceOptions slice(int k) {
    SliceOptions o;
    o.slice_set = true;
    o.slice = k;
    return o;
}

std::string err(const RackMap& m, const SliceOptions& o, int lo, int hi, Requeue rq = Requeue::Unset) {
    try {
        make_request(m, o, lo, hi, rq);
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

} // namespace

TEST_CASE("request tags round-trip and keep the user's comment", "[slicejob][quick]") {
    RequestTag t;
    t.nodes = 32;
    t.slice = 16;
    t.count = 2;
    t.mode = PlacementMode::Prefer;
    t.checkpointable = true;
    CHECK(t.str() == "nvlslice/1 nodes=32 slice=16 count=2 auto=0 placement=prefer checkpointable=1 handoff=gate");
    std::string c = tagged_comment(t, "my run 7");
    CHECK(c == t.str() + " | my run 7");
    auto back = RequestTag::parse(c);
    REQUIRE(back);
    CHECK(back->nodes == 32);
    CHECK(back->mode == PlacementMode::Prefer);
    CHECK(back->checkpointable);
    CHECK(back->checkpoint_s == 0);
    t.checkpoint_s = 5400; // --nvl-checkpoint-every: said only when given
    CHECK(t.str() ==
          "nvlslice/1 nodes=32 slice=16 count=2 auto=0 placement=prefer checkpointable=1 ckpt_every=5400 handoff=gate");
    CHECK(RequestTag::parse(t.str())->checkpoint_s == 5400);
    CHECK(user_comment(c) == "my run 7");
    CHECK(user_comment("plain comment") == "plain comment");
    CHECK_FALSE(RequestTag::parse("plain comment"));
    CHECK_THROWS_WITH(RequestTag::parse("nvlslice/2 nodes=1"), Catch::Contains("version 1"));
    CHECK_THROWS_WITH(RequestTag::parse("nvlslice/1 nodes=30 slice=16 count=2"), Catch::Contains("slice x count"));
}

TEST_CASE("placement records round-trip", "[slicejob][quick]") {
    PlacementRecord r;
    r.slice = 16;
    r.slices = {"nvl[0001-0016]", "nvl[0019-0034]"};
    r.repairs = 2;
    r.moves = 1;
    std::string s = r.str();
    CHECK(s == "nvlslice/1 placed slice=16 slices=nvl[0001-0016];nvl[0019-0034] repairs=2 moves=1");
    auto b = PlacementRecord::parse(s);
    REQUIRE(b);
    CHECK(b->state == RecordState::Placed);
    CHECK(b->slices == r.slices);
    CHECK(b->repairs == 2);
    CHECK_FALSE(b->repair_wait);
    PlacementRecord y;
    y.state = RecordState::Yielded;
    y.slice = 16;
    y.repair_wait = true;
    CHECK(y.str() == "nvlslice/1 yielded slice=16 repairs=0 moves=0 repairwait=1");
    CHECK(PlacementRecord::parse(y.str())->repair_wait);
    PlacementRecord w;
    w.state = RecordState::Waiting;
    w.reason = "fragmented: 2 racks with 15 free";
    CHECK(PlacementRecord::parse(w.str())->reason == "fragmented: 2 racks with 15 free");
    CHECK(PlacementRecord::parse(w.str())->state == RecordState::Waiting);
    // the reason's kind travels with it (why=), before the free text
    w.set_reason(Why::Fragmented, "fragmented: 2 racks with 15 free");
    CHECK(w.str() ==
          "nvlslice/1 waiting slice=0 repairs=0 moves=0 why=fragmented reason=fragmented: 2 racks with 15 free");
    CHECK(PlacementRecord::parse(w.str())->why == Why::Fragmented);
    // words in the reason never decide the kind: an older record (no why=)
    // or an unknown word is Other, no reason is None
    CHECK(PlacementRecord::parse("nvlslice/1 waiting slice=16 repairs=0 moves=0 reason=not repaired: n1")->why ==
          Why::Other);
    CHECK(PlacementRecord::parse("nvlslice/1 waiting slice=16 repairs=0 moves=0 why=later reason=x")->why ==
          Why::Other);
    CHECK(PlacementRecord::parse("nvlslice/1 placed slice=16 repairs=0 moves=0 why=busy")->why == Why::None);
    for (Why k : {Why::Busy, Why::HeldBack, Why::SlurmPlaces, Why::NotRepaired, Why::RanRackBlind, Why::NodesTaken})
        CHECK(parse_why(to_string(k)) == k);
    CHECK(why_of(Reason::WouldConsumeSpares) == Why::WouldConsumeSpares);
    CHECK_FALSE(PlacementRecord::parse(""));
    CHECK_THROWS_WITH(PlacementRecord::parse("nvlslice/1 sleeping slice=16"),
                      Catch::Contains("\"sleeping\" is not a record state"));
}

TEST_CASE("the record shares AdminComment with the site's text", "[slicejob][quick]") {
    const std::string rec = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0 job=7";
    // the record alone; before the site's text; after it; between two parts
    auto parts = split_admin_comment(rec);
    CHECK(parts.before.empty());
    CHECK(parts.record == rec);
    CHECK(parts.after.empty());
    const std::string site_first = "nhc: xid 79 on n003 | " + rec;
    parts = split_admin_comment(site_first);
    CHECK(parts.before == "nhc: xid 79 on n003");
    CHECK(parts.record == rec);
    const std::string site_after = rec + " | acct: proj-a";
    parts = split_admin_comment(site_after);
    CHECK(parts.record == rec);
    CHECK(parts.after == "acct: proj-a");
    const std::string between = "a | " + rec + " | b | c";
    parts = split_admin_comment(between);
    CHECK(parts.before == "a");
    CHECK(parts.after == "b | c");
    // no record: all of it is the site's; "nvlslice/" inside a word is not one
    parts = split_admin_comment("see nvlslice/1 docs");
    CHECK(parts.record.empty());
    CHECK(parts.before == "see nvlslice/1 docs");
    CHECK(split_admin_comment("").record.empty());
    // replaced in place, the site's text as it stands; a new one goes last
    CHECK(with_record("a | " + rec + " | b", "nvlslice/1 waiting") == "a | nvlslice/1 waiting | b");
    CHECK(with_record("nhc: ok", rec) == "nhc: ok | " + rec);
    CHECK(with_record("", rec) == rec);
    CHECK(with_record(rec, "nvlslice/1 waiting") == "nvlslice/1 waiting");
    // "" takes it out
    CHECK(with_record("a | " + rec + " | b", "") == "a | b");
    CHECK(with_record(rec + " | b", "") == "b");
    CHECK(with_record(rec, "").empty());
    CHECK(with_record("nhc: ok", "") == "nhc: ok");
    // parse reads the record part, its reason ending where the site's text begins
    auto r =
        PlacementRecord::parse("nhc: ok | nvlslice/1 waiting slice=16 repairs=0 moves=0 reason=busy racks | acct: x");
    REQUIRE(r);
    CHECK(r->state == RecordState::Waiting);
    CHECK(r->reason == "busy racks");
    CHECK_FALSE(PlacementRecord::parse("nhc: ok"));
    // a reason's '|' never ends the record early
    PlacementRecord w;
    w.state = RecordState::Waiting;
    w.reason = "licenses a|b short | now";
    CHECK(w.str().find(" | ") == std::string::npos);
    CHECK(PlacementRecord::parse("x | " + w.str() + " | y")->reason == "licenses a/b short / now");
}

TEST_CASE("record states move only along allowed transitions", "[slice_job][quick]") {
    using S = RecordState;
    for (S s : {S::Waiting, S::Placed, S::Repairing, S::Yielded, S::Restarting, S::Ignored}) {
        CHECK(parse_record_state(to_string(s)) == s);
        CHECK(allowed_transition(s, s));
        CHECK(allowed_transition(s, S::Waiting));
        CHECK(allowed_transition(s, S::Ignored));
    }
    CHECK(allowed_transition(S::Placed, S::Repairing));
    CHECK_FALSE(allowed_transition(S::Waiting, S::Repairing)); // nothing placed, nothing to repair
    CHECK_FALSE(allowed_transition(S::Ignored, S::Placed));    // left to Slurm
    CHECK(allowed_transition(S::Placed, S::Yielded));
    CHECK_FALSE(allowed_transition(S::Waiting, S::Yielded));
    CHECK(allowed_transition(S::Yielded, S::Restarting));
    CHECK(allowed_transition(S::Restarting, S::Placed));
    CHECK(allowed_transition(S::Repairing, S::Placed));
    CHECK_FALSE(allowed_transition(S::Repairing, S::Restarting));
}

TEST_CASE("option values are checked with the fix in the message", "[slicejob][quick]") {
    CHECK(parse_slice_option("16") == 16);
    CHECK(parse_slice_option("auto") == 0);
    CHECK_THROWS_WITH(parse_slice_option("sixteen"),
                      "--nvl-slice=sixteen: expected a slice size in nodes (1..4096) or \"auto\"");
    CHECK_THROWS_WITH(parse_slice_option("0"), Catch::StartsWith("--nvl-slice=0: expected"));
    // digits only: no blank, sign or anything after a NUL (the message
    // keeps the value as given: the plugin escapes its own lines)
    for (std::string_view v :
         std::initializer_list<std::string_view>{" 16", "+16", "16 ", "4097", "99999999999999999999"})
        CHECK_THROWS_WITH(parse_slice_option(v), Catch::Contains("expected a slice size"));
    CHECK_THROWS_AS(parse_slice_option(std::string_view("4\0x", 3)), Error);
    CHECK(parse_slice_option("4096") == 4096);
    CHECK(parse_placement_option("prefer") == PlacementMode::Prefer);
    CHECK_THROWS_WITH(parse_placement_option("loose"), Catch::StartsWith("--nvl-placement=loose: expected \"strict\""));
    // --nvl-checkpoint-every takes --time's forms
    CHECK(parse_checkpoint_every_option("60") == 3600);          // minutes
    CHECK(parse_checkpoint_every_option("90:30") == 5430);       // minutes:seconds
    CHECK(parse_checkpoint_every_option("1:00:00") == 3600);     // hours:minutes:seconds
    CHECK(parse_checkpoint_every_option("1-0") == 86400);        // days-hours
    CHECK(parse_checkpoint_every_option("0-2:30") == 9000);      // days-hours:minutes
    CHECK(parse_checkpoint_every_option("1-00:00:30") == 86430); // days-hours:minutes:seconds
    CHECK(parse_checkpoint_every_option("1:30") == 90);          // minutes:seconds, as --time reads it
    for (const char* bad :
         {"", "0", "0:30", "8-0", "abc", ":5", "5:", "1::2", "1:2:3:4", "-1", "1-", "2h", "99999:0:0", "1-99999"})
        CHECK_THROWS_WITH(parse_checkpoint_every_option(bad),
                          Catch::StartsWith(std::string("--nvl-checkpoint-every=") + bad + ": expected how often") &&
                              Catch::Contains("minutes, minutes:seconds, hours:minutes:seconds") &&
                              Catch::Contains("1 minute to 7 days"));
}

TEST_CASE("submissions are validated against the map before they reach Slurm", "[slicejob][quick]") {
    RackMap m = make_map(2, 18);
    auto t = make_request(m, slice(16), 32, 32, Requeue::Unset);
    CHECK(t.count == 2);
    CHECK(t.slice == 16);
    auto a = make_request(m, slice(0), 24, 24, Requeue::Unset);
    CHECK(a.slice == 12);
    CHECK(a.auto_size);
    CHECK_THAT(err(m, slice(16), 20, 20),
               Catch::Contains("--nvl-slice=16: -N 20 is not a multiple of the slice size (use -N 16 or -N 32"));
    CHECK_THAT(err(m, slice(16), 8, 8), Catch::Contains("(use -N 16, or --nvl-slice=auto)"));
    CHECK_THAT(err(m, slice(17), 34, 34), Catch::Contains("--nvl-slice=17: larger than any rack can hold (16"));
    CHECK_THAT(err(m, slice(16), 0, 0), Catch::Contains("needs a node count: add -N/--nodes"));
    CHECK_THAT(err(m, slice(16), 16, 32), Catch::Contains("fixed node count, not the range -N 16-32"));
    SliceOptions ck = slice(16);
    ck.checkpointable = true;
    CHECK_THAT(err(m, ck, 16, 16, Requeue::Unset), Catch::Contains("--nvl-checkpointable needs --requeue"));
    CHECK_THAT(err(m, ck, 16, 16, Requeue::NoRequeue), Catch::Contains("--nvl-checkpointable needs --requeue"));
    CHECK_THAT(err(m, ck, 16, 16, Requeue::NotBatch), Catch::Contains("sbatch --requeue"));
    CHECK(make_request(m, ck, 16, 16, Requeue::Requeue).checkpointable);
    ck.checkpoint_s = 1800;
    CHECK(make_request(m, ck, 16, 16, Requeue::Requeue).checkpoint_s == 1800);
    SliceOptions every = slice(16);
    every.checkpoint_s = 1800;
    CHECK_THAT(err(m, every, 16, 16, Requeue::Requeue), Catch::Contains("add --nvl-checkpointable"));
    SliceOptions only_mode;
    only_mode.placement_set = true;
    CHECK_THAT(err(m, only_mode, 16, 16), Catch::Contains("need --nvl-slice"));
    m.defaults().slice_sizes = {16, 8};
    CHECK_THAT(err(m, slice(4), 16, 16), Catch::Contains("allows slice sizes 16, 8 only"));
}

TEST_CASE("slices and task env derive from the node list alone", "[slicejob][quick]") {
    RackMap m = make_map(3, 18);
    // 2 x 16 on r1 and r3, given out of order as Slurm may
    auto nodes = hostlist_expand("n[037-052],n[001-016]");
    auto slices = derive_slices(m, nodes, 16);
    REQUIRE(slices.size() == 2);
    std::vector<std::vector<std::string>> named;
    for (auto& s : slices) named.push_back(m.node_names(s));
    SliceEnv e = slice_env_for(m, named, "n040");
    CHECK(e.index == 1);
    CHECK(e.count == 2);
    CHECK(e.size == 16);
    CHECK(e.rank == 3);
    CHECK(e.domain == "r3");
    CHECK(e.nodelist == "n[037-052]");
    CHECK(e.leader == "n037");
    // two 8-node slices in one rack split in node order
    auto two = derive_slices(m, hostlist_expand("n[001-016]"), 8);
    REQUIRE(two.size() == 2);
    CHECK(names(m, two[1]) == "n[009-016]");
    // after a repair: a spare replaced n003
    auto rep = derive_slices(m, hostlist_expand("n[001-002,004-017]"), 16);
    CHECK(names(m, rep[0]) == "n[001-002,004-017]");
    CHECK_THROWS_WITH(derive_slices(m, hostlist_expand("n[001-010],n[019-024]"), 8),
                      Catch::Contains("10 nodes in r1, not a multiple of its slice size 8"));
    CHECK_THROWS_WITH(derive_slices(m, {"zz1"}, 8), Catch::Contains("zz1 of the job is not in the rack map"));
    // the same question without an exception: whole slices or not
    CHECK(try_derive_slices(m, nodes, 16));
    CHECK(try_derive_slices(m, hostlist_expand("n[001-002,004-017]"), 16));
    CHECK_FALSE(try_derive_slices(m, hostlist_expand("n[001-010],n[019-024]"), 8));
    CHECK_FALSE(try_derive_slices(m, {"zz1"}, 8));
    CHECK_FALSE(try_derive_slices(m, nodes, 0));
    CHECK_THROWS_WITH(slice_env_for(m, named, "n030"), Catch::Contains("not in any slice"));
    // a split slice (prefer fallback) names both racks
    SliceEnv sp = slice_env_for(m, {{"n017", "n018", "n019", "n020"}}, "n019");
    CHECK(sp.domain == "r1,r2");
}

TEST_CASE("the hand-off: in the tag, in the configuration, and chosen from the running Slurm", "[tag][native][quick]") {
    RequestTag t;
    t.slice = 16;
    t.count = 2;
    t.nodes = 32;
    CHECK_THAT(t.str(), Catch::EndsWith("handoff=gate"));
    t.hand_off = HandOff::Native;
    auto back = RequestTag::parse(t.str());
    REQUIRE(back);
    CHECK(back->hand_off == HandOff::Native);
    // a tag written before the hand-off was recorded: the gate
    auto old = RequestTag::parse("nvlslice/1 nodes=16 slice=16 count=1 auto=0 placement=strict checkpointable=0");
    CHECK(old->hand_off == HandOff::Gate);
    CHECK_THROWS_WITH(RequestTag::parse("nvlslice/1 nodes=16 slice=16 count=1 handoff=auto"),
                      Catch::Contains("expected gate or native"));
    CHECK_THROWS_WITH(parse_hand_off("segment", "mode"),
                      Catch::Contains("mode=segment: expected auto, gate or native"));
    CHECK(resolve_hand_off(HandOff::Auto, true, "topology/block") == HandOff::Native);
    CHECK(resolve_hand_off(HandOff::Auto, false, "topology/block") == HandOff::Gate);
    CHECK(resolve_hand_off(HandOff::Auto, true, "topology/tree") == HandOff::Gate);
    CHECK(resolve_hand_off(HandOff::Auto, true, "") == HandOff::Gate);
    CHECK(resolve_hand_off(HandOff::Gate, true, "topology/block") == HandOff::Gate);
    CHECK(resolve_hand_off(HandOff::Native, false, "") == HandOff::Native);
}

TEST_CASE("native mode: checkpointable work a rack's spares can take goes to nvlsliced first", "[tag][native][quick]") {
    RackMap m = make_map(3, 18); // 2 spares a rack, default slice 16
    auto tag = [&](int nodes, bool ck, bool prefer = false) {
        SliceOptions o = slice(nodes);
        o.checkpointable = ck;
        if (prefer) o.mode = PlacementMode::Prefer;
        return make_request(m, o, nodes, nodes, Requeue::Requeue);
    };
    CHECK(spares_first(tag(1, true), m));
    CHECK(spares_first(tag(2, true), m));
    CHECK_FALSE(spares_first(tag(4, true), m));       // more than a rack's spares
    CHECK_FALSE(spares_first(tag(2, false), m));      // not checkpointable: never lent
    CHECK_FALSE(spares_first(tag(2, true, true), m)); // prefer: through the gate anyway
    CHECK_FALSE(spares_first(tag(16, true), m));      // a whole slice
    m.set_spares(0);
    CHECK_FALSE(spares_first(tag(1, true), m)); // no spares kept: nothing to put it on
    RackMap wide = make_map(2, 18);
    wide.set_spares(4);
    SliceOptions four = slice(4);
    four.checkpointable = true;
    CHECK(spares_first(make_request(wide, four, 4, 4, Requeue::Requeue), wide)); // 4 spares a rack
}

TEST_CASE("node pools: a node list on a segment job is a pool from Slurm 25.11", "[tag][native][quick]") {
    CHECK_FALSE(has_node_pools("22.05.8"));
    CHECK_FALSE(has_node_pools("24.11.5"));
    CHECK_FALSE(has_node_pools("25.05.3"));
    CHECK(has_node_pools("25.11.0"));
    CHECK(has_node_pools("26.05.5"));
    CHECK(has_node_pools("27.05.0-0rc1"));
    CHECK_FALSE(has_node_pools(""));
    CHECK_FALSE(has_node_pools("25"));
    CHECK_FALSE(has_node_pools("x.11"));
    CHECK_FALSE(has_node_pools("99999999999.1"));
}

TEST_CASE("IMEX: one channel per slice where Slurm offers it", "[tag][native][quick]") {
    CHECK(*network_for_slices("", "switch/nvidia_imex", "25.11.2") == "unique-channel-per-segment");
    CHECK(*network_for_slices("bw=2", "switch/nvidia_imex", "26.05.5") == "bw=2,unique-channel-per-segment");
    CHECK_FALSE(network_for_slices("unique-channel-per-segment", "switch/nvidia_imex", "26.05.5"));
    CHECK_FALSE(network_for_slices("", "switch/nvidia_imex", "24.11.5")); // one channel per job before 25.11
    CHECK_FALSE(network_for_slices("", "switch/none", "26.05.5"));
    CHECK_FALSE(network_for_slices("", "", "26.05.5"));
}

TEST_CASE("--requeue as the client reports it: expedite is a requeue", "[tag][quick]") {
    CHECK(parse_requeue_value("requeue") == Requeue::Requeue);
    CHECK(parse_requeue_value("expedite") == Requeue::Requeue); // Slurm 25.11+
    CHECK(parse_requeue_value("no-requeue") == Requeue::NoRequeue);
    CHECK(parse_requeue_value("unset") == Requeue::Unset);
    CHECK(parse_requeue_value("invalid-context") == Requeue::NotBatch);
}
