"""The prefix-cache model (workload/prefix_cache.py) against hand counts (issue 19).

Blocks of B = 4 tokens, 1 byte each; the hybrid model's state snapshot costs 10 bytes."""

import pytest

from prfaas_plan.choices import SnapshotPolicy
from prfaas_plan.errors import PlanInputError
from prfaas_plan.workload.prefix_cache import BlockRequests, CacheConfig, CacheGeometry, replay

B = 4
DENSE = CacheGeometry(B, 1.0, 0.0)
HYBRID = CacheGeometry(B, 1.0, 10.0)
BIG = 1e9

# a few requests sharing prefixes: (block ids, input tokens)
SHARED = BlockRequests.of([[1, 2, 3], [1, 2, 3, 4], [1, 2, 5], [1, 9], [1, 2, 3, 4]], [12, 16, 10, 8, 16])


def test_dense_hits_are_the_longest_matched_block_prefix():
    rep = replay(SHARED, DENSE, CacheConfig(BIG))
    # by hand: R1 matches [1,2,3] (12 tokens); R2 [1,2] (8); R3 [1] (4); R4 all 4 blocks, capped at L - 1 = 15
    assert rep.matched_blocks.tolist() == [0, 3, 2, 1, 4]
    assert rep.cached_tokens.tolist() == [0, 12, 8, 4, 15]
    assert rep.token_hit_rate == pytest.approx(39 / 62)
    assert rep.block_hit_rate == pytest.approx(10 / 16)
    assert rep.snapshots_kept == 0 and rep.snapshot_bytes_peak == 0


def test_hybrid_every_two_blocks_reuses_only_up_to_a_kept_snapshot():
    rep = replay(SHARED, HYBRID, CacheConfig(BIG, snapshots=SnapshotPolicy.every_k_blocks, every_blocks=2))
    # by hand: R0 keeps a snapshot at [1,2]; R1 matches 3 blocks but resumes at 2 (8 tokens), keeps [1,2,3,4];
    # R2 resumes at [1,2] (8); R3 matches [1], no snapshot there (0), keeps [1,9]; R4 repeats R1: its snapshot
    # at [1,2,3,4] holds all L = 16 tokens (of no use), so it resumes at [1,2] (8) and rewrites that one
    assert rep.matched_blocks.tolist() == [0, 3, 2, 1, 4]
    assert rep.reusable_blocks.tolist() == [0, 2, 2, 0, 2]
    assert rep.cached_tokens.tolist() == [0, 8, 8, 0, 8]
    assert rep.snapshots_kept == 3
    assert rep.snapshot_hits == 3
    assert rep.snapshot_bytes_peak == 30.0
    assert rep.usable_block_share == pytest.approx(6 / 10)


def test_hybrid_snapshots_at_request_ends():
    rep = replay(SHARED, HYBRID, CacheConfig(BIG, snapshots=SnapshotPolicy.request_end))
    # by hand: ends kept at [1,2,3] (R0), [1,2,3,4] (R1), [1,2,5] (R2), [1,9] (R3); R4 repeats R1, whose end
    # snapshot holds all 16 tokens, so it resumes at R0's end [1,2,3] (12)
    assert rep.reusable_blocks.tolist() == [0, 3, 0, 0, 3]
    assert rep.cached_tokens.tolist() == [0, 12, 0, 0, 12]
    assert rep.snapshots_kept == 4


@pytest.mark.parametrize(("every", "expect"), [(None, [0, 0]), (1, [0, 12]), (2, [0, 8]), (4, [0, 0])])
def test_a_hybrid_exact_repeat_resumes_only_below_the_prompts_end(every, expect):
    """A state taken after token L cannot be wound back to L - 1: an exact repeat resumes at the
    deepest kept snapshot below L (an every-k one), none with snapshots at request ends only."""
    trace = BlockRequests.of([[1, 2, 3, 4]] * 2, [16, 16])
    policy = {"snapshots": SnapshotPolicy.request_end} if every is None else {"every_blocks": every}
    rep = replay(trace, HYBRID, CacheConfig(BIG, **policy))
    assert rep.matched_blocks.tolist() == [0, 4]
    assert rep.cached_tokens.tolist() == expect
    assert replay(trace, DENSE, CacheConfig(BIG, **policy)).cached_tokens.tolist() == [0, 15]  # KV truncates


def test_a_snapshot_at_a_partial_last_block_equals_L():
    # 10 tokens in blocks of 4: snapshots every block at 4, 8 and 10 = L; the repeat resumes at 8, dense at 9
    trace = BlockRequests.of([[1, 2, 3]] * 2, [10, 10])
    rep = replay(trace, HYBRID, CacheConfig(BIG, every_blocks=1))
    assert rep.cached_tokens.tolist() == [0, 8]
    assert rep.snapshot_hits == 1 and rep.snapshots_kept == 3  # 4, 8, 10; the repeat rewrites 10
    assert replay(trace, DENSE, CacheConfig(BIG)).cached_tokens.tolist() == [0, 9]


def test_both_policies_keep_the_union():
    rep = replay(SHARED, HYBRID, CacheConfig(BIG, snapshots=SnapshotPolicy.both, every_blocks=2))
    # R1 resumes at R0's end [1,2,3]; R2 at [1,2] (every 2); R4 at [1,2,3] (R1's end holds all of R4's 16 tokens)
    assert rep.reusable_blocks.tolist() == [0, 3, 2, 0, 3]
    # kept: R0 [1,2] and [1,2,3]; R1 [1,2,3,4]; R2 [1,2,5]; R3 [1,9]
    assert rep.snapshots_kept == 5


def test_lru_with_room_for_one_prefix_evicts_as_counted_by_hand():
    a, b = [1, 2, 3, 4], [5, 6, 7, 8]
    trace = BlockRequests.of([a, b, a, a, b], [16] * 5)
    rep = replay(trace, DENSE, CacheConfig(4.0))  # four 1-byte blocks: one prefix
    # B evicts A, A evicts B, A hits, B evicts A: 12 blocks evicted
    assert rep.cached_tokens.tolist() == [0, 0, 0, 15, 0]
    assert rep.evicted_bytes == 12.0


def test_lru_evicts_the_least_recent_tail_first():
    trace = BlockRequests.of([[1, 2, 3, 4], [1, 2, 9, 10], [1, 2, 3, 4], [1, 2, 9, 10]], [16] * 4)
    rep = replay(trace, DENSE, CacheConfig(5.0))
    # after R1 the LRU order is 4, 3, 10, 9, 2, 1 (tails first): 4 goes. R2 matches [1,2,3], then 10 goes
    # (order 9, 4, 3, 2, 1 after R2), so R3 matches [1,2,9]; then 4 goes again
    assert rep.matched_blocks.tolist() == [0, 2, 3, 3]
    assert rep.evicted_bytes == 3.0


def test_hybrid_snapshot_memory_counts_against_the_capacity():
    # room for 4 blocks and one 10-byte snapshot: R0 keeps its end snapshot; R1 ([5,6]) needs 2 blocks +
    # a snapshot: 12 + 12 > 14, so LRU drops R0's snapshot, older than its blocks, and nothing else
    trace = BlockRequests.of([[1, 2], [5, 6], [1, 2, 3]], [8, 8, 12])
    rep = replay(trace, HYBRID, CacheConfig(14.0, snapshots=SnapshotPolicy.request_end))
    assert rep.matched_blocks.tolist() == [0, 0, 2]
    assert rep.reusable_blocks.tolist() == [0, 0, 0]  # the blocks survive, the snapshot did not
    assert rep.snapshot_bytes_peak == 10.0
    roomy = replay(trace, HYBRID, CacheConfig(BIG, snapshots=SnapshotPolicy.request_end))
    assert roomy.reusable_blocks.tolist() == [0, 0, 2]  # kept, R0's snapshot (8 < 12 tokens) serves R2


def test_host_dram_tier_holds_what_hbm_evicts():
    a, b = [1, 2, 3, 4], [5, 6, 7, 8]
    trace = BlockRequests.of([a, b, a], [16] * 3)
    rep = replay(trace, DENSE, CacheConfig(4.0, dram_bytes=4.0))
    assert rep.cached_tokens.tolist() == [0, 0, 15]
    assert rep.dram_hit_tokens.tolist() == [0, 0, 15]
    assert rep.evicted_bytes == 0.0


def test_block_identity_is_the_whole_prefix():
    # R1's first id is R0's second: another prefix, so no match; R2 repeats R0's first two blocks
    trace = BlockRequests.of([[1, 2, 3], [2, 3], [1, 2]], [12, 8, 8])
    rep = replay(trace, DENSE, CacheConfig(BIG))
    assert rep.matched_blocks.tolist() == [0, 0, 2]


def test_a_request_needs_one_block_id_per_block():
    with pytest.raises(PlanInputError, match=r"request 1: 9 input tokens need ceil\(L / 4\) = 3 block ids, got 2"):
        replay(BlockRequests.of([[1], [1, 2]], [4, 9]), DENSE, CacheConfig(BIG))


def test_geometry_from_the_models_kv():
    """Block bytes = full-attention bytes per token x B; a snapshot = the fixed linear state + each SWA
    group's bytes per token x min(l, window) (accounting.kv, by hand from the profiles' layers)."""
    from prfaas_plan.accounting.kv import KvModel
    from prfaas_plan.profiles.registry import resolve_model

    kv = KvModel.of(resolve_model("mimo-v2-flash"))  # full attention + SWA (window 128)
    ((window, per_token),) = kv.windows
    g = CacheGeometry.of(kv, 512)
    assert g.block_bytes == kv.growing_bytes_per_token * 512 and g.hybrid
    assert g.snapshot_bytes(100) == per_token * 100 and g.snapshot_bytes(4096) == per_token * window
    dense = CacheGeometry.of(KvModel.of(resolve_model("llama-3.1-8b")), 16)
    # 32 layers x 8 KV heads x (128 + 128) x 2 bytes per token, 16 tokens a block
    assert dense.block_bytes == 32 * 8 * 256 * 2 * 16 and not dense.hybrid and dense.snapshot_bytes(100) == 0


def test_a_cache_given_in_gib_holds_that_many_binary_gigabytes():
    """``CacheConfig.of_gib`` is GiB = 2^30 bytes: four blocks of a quarter GiB fill 1 GiB
    exactly, so a repeat of a 4-block request finds all four (cached L - 1 = 15 tokens); at
    10^9 bytes only three would fit (12 tokens)."""
    quarter = CacheGeometry(B, 2**30 / 4, 0.0)
    assert CacheConfig.of_gib(1, 2).hbm_bytes == 2**30 and CacheConfig.of_gib(1, 2).dram_bytes == 2**31
    rep = replay(BlockRequests.of([[1, 2, 3, 4], [1, 2, 3, 4]], [16, 16]), quarter, CacheConfig.of_gib(1))
    assert rep.cached_tokens.tolist() == [0, 15]
    short = replay(BlockRequests.of([[1, 2, 3, 4], [1, 2, 3, 4]], [16, 16]), quarter, CacheConfig(1e9))
    assert short.cached_tokens.tolist() == [0, 12]
