/* dl_plan.h - the balanced work plan of the streaming tensor-core family
 * (gpu/decode_stream.cu), built on the host from the page table, plain C so the
 * CPU tests and the split-aware model use the very schedule the kernel runs.
 *
 * Work = tiles of `tile` tokens of every (request, KV head) task, task t = b * Hkv + kvh,
 * laid end to end (task-major, tiles in token order). The streaming kernels plan with their 64-token tiles, or
 * (DL_STREAM_UNIT=16 or 32, attempt #44) with tiles of 16 or 32 tokens, a cut at pages: a segment then starts
 * and ends inside a 64-token tile of its sequence, and the kernels take 64-token tiles from its first token. The N tiles are cut into
 * `num_slots` contiguous runs of floor/ceil(N / num_slots) tiles, one per consumer
 * warp (slot = cta * warps + warp). A run that crosses task boundaries is a list
 * of segments; a task whose tiles land in more than one slot is "split": each of
 * its segments writes a normalized partial (o, lse) to the workspace, and the
 * warp that finishes the task's last segment merges them in token order. A task
 * in one segment writes o/lse directly.
 *
 * The heads order (DL_ORDER_HEADS, DL_STREAM_ORDER=heads, the default where it fits: DL_ORDER_AUTO below;
 * issue 10, attempt #24) walks the requests' tiles
 * once, without heads, cuts them into floor(slots / Hkv) runs, and gives run r to slots r * Hkv + h, one per
 * KV head h: the Hkv warps that read a page's rows (NHD: 128-byte pieces of the same 1 KB token rows) run
 * side by side instead of a fraction of the launch apart. Slots past the last run stay empty. The runs are
 * equal, or (a cost > 0, attempt #30) cut where the costliest run, counting that many tiles for each request
 * boundary inside it, costs least. With a head group g (DL_PLAN_HEAD_GROUP, attempt #67) the walk is the requests'
 * tiles once per group of g heads, cut into floor(slots / g) runs, run r to slots r * g + i for head i of the
 * group(s) it covers.
 *
 * Device layout of `buf` (int32): slot_ptr[num_slots + 1] | seg_task[S] |
 * seg_t0[S] | seg_t1[S] | seg_out[S] | task_ptr[num_tasks + 1] | tickets[num_tasks] | pool[2], S = num_segs;
 * seg_t0/t1 are tile indices inside the task (the kernels' records hold them in tokens, plan_records in
 * gpu/decode_stream.cu), seg_out is -1 (whole task) or the
 * workspace row of a partial; the rows of a split task's partials are task_ptr[t]..task_ptr[t + 1] in
 * token order (an unsplit task has none: task_ptr[t + 1] == task_ptr[t]);
 * tickets (zero, and left zero by every launch) count the finished segments of a
 * split task so that the last one merges the partials (with DL_STREAM_MERGE=kernel they
 * start parked far below zero, so that none does, and the merge kernel parks them again); pool[0] counts
 * the pool slots claimed in a launch and pool[1] the producers done claiming (zero, and reset to zero by
 * the last producer done). */
#ifndef DL_PLAN_H
#define DL_PLAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int tile;              /* tokens per tile (the unit of the cut: 64, or 16 / 32 with DL_STREAM_UNIT) */
    int warps;             /* consumer warps per CTA */
    int ctas;              /* grid size */
    int num_tasks, num_slots, num_segs, num_partials;
    int num_static;        /* slots [0, num_static): one per consumer warp; [num_static, num_slots): the pool */
    int64_t num_tiles;
    int order;             /* the walk taken: DL_ORDER_TASKS or DL_ORDER_HEADS (AUTO resolved; tasks when fewer
                            * slots than heads) */
    int cut, seg_cost;     /* the heads order's cut taken: DL_CUT_EQUAL, DL_CUT_COST (at seg_cost tiles a
                            * boundary) or DL_CUT_APPORTION; DL_CUT_EQUAL and 0 for the tasks order */
    int head_group;        /* the heads order's group of KV heads read side by side, where it is not all of them
                            * (DL_PLAN_HEAD_GROUP below); else 0 */
    int cluster;           /* 0, or CTAs a cluster (dl_plan_build_cluster) */
    int cluster_per_task;  /* with cluster: the clusters of each task (task t: clusters t K..) */
    int32_t *buf;          /* host copy, layout above (owned) */
    size_t buf_len;        /* int32 elements */
    /* the schedule in tokens for the CPU model (owned): segments of task t are
     * [sched_begin[k], next begin or len) for k in [sched_indptr[t], sched_indptr[t+1]) */
    int64_t *sched_indptr, *sched_begin;
    void *dev;             /* device copy of buf (owned by whoever uploaded it) */
} dl_plan;

/* Build the plan for B requests of the given sequence lengths (each >= 1), Hkv
 * heads. max_ctas: the most CTAs resident at once (SMs x CTAs per SM); warps:
 * consumer warps per CTA; min_tiles: fewest tiles a slot gets before fewer slots
 * are used (merges cost more than they buy below it). Returns 0 or dl_fail(). */
int dl_plan_build(int B, int Hkv, const int32_t *seq_len, int tile, int warps, int max_ctas, int min_tiles,
                  dl_plan *p);
/* dl_plan_build with a pool (issue 10, the tail, attempt #19; claimed by the kernels with a producer
 * per consumer, DL_STREAM_POOL; default off: 10 % in 2-tile chunks was slower everywhere, H200
 * 2026-12-03e): the first N - N * pool_pct / 100 tiles of the walk go to the num_static
 * warp slots as dl_plan_build would cut them, the rest to pool slots of `chunk` tiles
 * (the last may be shorter), slot ids num_static.. in the walk's order, for warps that
 * finish early to claim at run time. Segments, partials and the schedule are built as
 * for any slot, so the model's schedule does not depend on who claims what.
 * pool_pct in 0..50 (0: dl_plan_build's plan), chunk >= 1; order: DL_ORDER_AUTO, DL_ORDER_TASKS, or
 * DL_ORDER_HEADS with pool_pct 0. */
/* cuts (the heads order alone): a cost 0..DL_PLAN_MAX_SEG_COST in tiles that each request boundary inside a
 * run adds when the walk is cut (0: equal runs; DL_STREAM_SEG_COST, attempt #30), or'ed with DL_PLAN_APPORTION:
 * where there are at least as many runs as requests, each request gets its own runs, the highest-averages rule
 * (DL_STREAM_APPORTION, attempt #31); the cost is used where there are fewer. */
/* Or'ed in too, DL_PLAN_HEAD_GROUP(g) (g dividing Hkv; Hkv: all the heads; 0: auto, all of them unless the order
 * is auto, there is no pool and the whole-CTA slots are not a multiple of Hkv: then gcd(slots, Hkv) where that is 2
 * or more): the heads order walks the requests' tiles once per group of g consecutive KV heads and gives each run
 * to g slots, one per head of its group, so that g warps read a page's rows side by side and the slots need only
 * be a multiple of g (llama-13B's 40 KV heads and llama3-8B's 8 on 396 warps took the tasks order before: groups of
 * 4 are 0.7-1.6 % faster there on an H100; DL_STREAM_HEAD_GROUP, gpu/NOTES.md #67). */
#define DL_PLAN_MAX_SEG_COST 256
enum { DL_CUT_EQUAL = 0, DL_CUT_COST = 1, DL_CUT_APPORTION = 2 };
#define DL_PLAN_SEG_COST_MASK 0xfff
#define DL_PLAN_APPORTION 0x1000
#define DL_PLAN_HEAD_GROUP_SHIFT 16
#define DL_PLAN_HEAD_GROUP_MASK 0x3ff
#define DL_PLAN_HEAD_GROUP(g) ((g) << DL_PLAN_HEAD_GROUP_SHIFT)
int dl_plan_build_pool(int B, int Hkv, const int32_t *seq_len, int tile, int warps, int max_ctas, int min_tiles,
                       int pool_pct, int chunk, int order, int cuts, dl_plan *p);
/* Whole waves (the default; DL_STREAM_WAVES=0 turns it off; issue 10, attempt #16): when min_tiles leaves a
 * plan fewer CTAs than max_ctas (sms x resident CTAs per SM) and not a multiple of
 * sms, the CTA count rounded to the nearest multiple of sms (ties up, at most
 * max_ctas), for the caller to build the plan with as max_ctas and min_tiles 1,
 * so that every SM runs the same number of CTAs; 0 to leave the plan as it is
 * (it fills max_ctas or whole waves already, or is under half a wave: a small
 * case). Example: llama3-8B B1 L32768 on 132 SMs, 3 warps a CTA, min_tiles 6:
 * 228 CTAs (96 SMs run two, 36 run one); rounded, 264 (5.2 tiles a warp). */
int dl_plan_wave_ctas(int64_t num_tiles, int warps, int sms, int max_ctas, int min_tiles);
/* Resident CTAs per SM of a persistent grid: what shared memory allows (smem_sm over the CTA's
 * smem_cta plus the runtime's 1 KB reserve), or the occupancy API's count where lower (occupancy
 * > 0: registers may bind first), clamped to 1..4. Example: the streaming kernel at D128 with an
 * 8-bit cache, 99,448 bytes a CTA of 228 KB: 2; at groups 9-16 (two n8 tiles, 230-245 registers)
 * the occupancy was 1 with 3 consumer warps (x 192 threads), and a plan of 2 ran as two waves
 * (gpu/NOTES.md, #23); with 2 (attempt #54, 128 threads, up to 237 registers) 2 fit by registers. */
int dl_plan_ctas_per_sm(int smem_sm, int smem_cta, int occupancy);
/* A layer chained with programmatic dependent launch (run --chain): the bytes of unused dynamic shared memory to add
 * to each of the plan's CTAs so that no SM holds more of them than the plan gives it, ceil(ctas / sms), where the
 * kernel would otherwise fit more (smem_sm over smem_cta plus the 1 KB reserve, or occupancy > 0 where lower); 0
 * where it fits no more (or the plan runs more than one wave). The next layer's CTAs launch while the previous
 * layer's merge kernel or last CTAs still run and land where room frees first: with room for more than the plan's
 * count an SM they pile up on the SMs that freed first (thirty-seventh session, H100, a DIAG build's
 * DL_STREAM_SMEM_PAD: group 16 B4 L32768 e4m3, planned at 1 CTA an SM where 2 fit, chained 46.2-46.4 -> 40.6-40.7
 * us a layer capped; the two-head stage at 2 an SM where 4 fit 122.1 -> 98.1-98.2). The pad keeps room for the
 * merge kernel's CTAs beside the capped ones. Example: 99,448 bytes a CTA, 228 KB an SM, 132 CTAs on 132 SMs,
 * 2 fit: 16,265 bytes (116,737 a CTA with the reserve: one fits, two do not). */
int dl_plan_chain_pad(int smem_sm, int smem_cta, int occupancy, int ctas, int sms);
/* dl_plan_build_pool with max_ctas and min_tiles, then, when waves is set and that plan
 * splits some task already, rebuilt with dl_plan_wave_ctas's count (and min_tiles
 * 1). A plan of whole tasks is kept: rounding fp8-none-wgmma's llama3-8B B64 L1024
 * plan (256 CTAs of whole 16-tile tasks) up to 264 split every task and cost
 * 50.4 -> 62.8 us (H200, 2026-12-03d); B1 L32768 (split either way) gained
 * 40.5 -> 38.7. Returns 0 or dl_fail(). */
int dl_plan_build_waves(int B, int Hkv, const int32_t *seq_len, int tile, int warps, int sms, int max_ctas,
                        int min_tiles, int waves, int pool_pct, int chunk, int order, int cuts, dl_plan *p);
/* The walks of the plan (see the top). */
/* AUTO (the default since attempt #24) takes HEADS where every slot gets a run (the slots a multiple of
 * Hkv, at least Hkv, no more runs than tiles a head, no pool), else TASKS: measured on the H200 (2026-12-03,
 * results/h200_2026-12-03h/, bf16-hw-stream, llama3-8B e4m3) heads against tasks: B128 L4096 277.58 vs 282.45
 * and 280.93 us, B256 L4096 530.24 vs 533.63, B64 L1024 59.55 vs 60.77, HND B128 269.79 vs 271.74. The wgmma
 * kernels take AUTO's heads plan only where it needs no merge kernel (attempt #25: gpu/decode_stream.cu make_plan
 * rebuilds it in the tasks order otherwise). */
enum { DL_ORDER_AUTO = -1, DL_ORDER_TASKS = 0, DL_ORDER_HEADS = 1 };
/* The order named by the DL_STREAM_ORDER value s (NULL or "auto": AUTO; "tasks"; "heads"). Returns 0, or
 * dl_fail() naming the variable and the value. */
int dl_plan_order_of(const char *s, int *order);
/* The streaming kernels' shared-memory stage (DL_STREAM_STAGE, gpu/decode_stream.cu page_stage_plan), by value the
 * page stage's KV heads a stage: AUTO (by policy and case), TILE (a ring of 64-token tiles per consumer warp), PAGE2
 * (one ring shared by 2 consumer warps, stages of 16 rows of 2 KV heads; bf16-hw-stream) or PAGE (8 warps, 8 heads). */
enum { DL_STAGE_AUTO = -1, DL_STAGE_TILE = 0, DL_STAGE_PAGE2 = 2, DL_STAGE_PAGE = 8 };
/* The stage named by the DL_STREAM_STAGE value s (NULL or "auto": AUTO; "tile", "page", "page2"). Returns 0, or
 * dl_fail() naming the variable and the value. */
int dl_plan_stage_of(const char *s, int *stage);
/* The page stage's heads bf16-hw-stream's DL_STREAM_STAGE=auto takes, from DL_STREAM_HW_PAGE (2 or 8); where unset,
 * 2, or 8 for a layer chained with programmatic dependent launch (chained_pdl nonzero: run --chain, DL_STREAM_PDL=1).
 * Returns 0, or dl_fail() naming the variable and the value. */
int dl_plan_hw_page_heads(int chained_pdl, int *heads);
/* The layer chain's knobs (run --chain): DL_STREAM_PDL (1, default: a chained layer launched with programmatic
 * dependent launch; 0 plainly) and DL_STREAM_CHAIN_CAP (1, default: such a layer held to its plan's CTAs an SM,
 * dl_plan_chain_pad; 2: every launch so held, standalone and plain chains too, a test of whether an idle GPU places
 * a plan with room evenly: no gain on an H100, B1 L32768 and group 16 B4 L32768 e4m3, 2026-12-07; 0 not held).
 * Returns 0, or dl_fail() naming the variable and the value. */
int dl_plan_chain_knobs(int *pdl, int *cap);
/* The streaming knobs checked from the environment before anything is read or launched (`decodelab run` and
 * `experiment`): every DL_STREAM_* variable set must be one a build reads (else the nearest is named), the integers
 * whole numbers in the widest range any case takes (a case's own bounds, as what fits an SM, are checked when its plan
 * is made), the words (DL_STREAM_ORDER, DL_STREAM_STAGE, DL_STREAM_MERGE) and DL_STREAM_HW_PAGE values they take.
 * Returns 0, or dl_fail() naming the first bad one and its value. */
int dl_plan_check_env(void);
/* The knobs dl_plan_check_env knows: how many, and the i-th's name (NULL out of range). */
int dl_plan_knob_count(void);
const char *dl_plan_knob_name(int i);
/* 1 where the `heads` slots of every CTA of plan p walk the same tiles of the same requests, slot c * heads + h
 * for the h-th KV head of an aligned group of `heads` (the heads order with warps = heads, no pool; heads = Hkv:
 * all of them, else a head group of that size, DL_PLAN_HEAD_GROUP), else 0: what the streaming kernels' page stage
 * needs (gpu/decode_stream.cu page_shape: one ring of 16-row pieces of the CTA's heads, shared by its warps). */
int dl_plan_ctas_share_tiles(const dl_plan *p, int heads);
/* The clusters' plan (issue 10, attempt #61; DL_STREAM_MERGE=cluster): task t = b * Hkv + kvh gets K = per_task
 * thread-block clusters of `cluster` CTAs, clusters t K.. (CTAs t K C..), its tiles cut into K x cluster x warps
 * equal runs in token order, one a consumer warp (slot = cta * warps + warp; a slot of no tile where a task has
 * fewer tiles than that): a split task's partials are merged inside each cluster after a cluster barrier, and with
 * K > 1 the K clusters' results by the task's last CTA to finish (a ticket a task), with no second kernel. The
 * tasks order's layout, p->cluster and p->cluster_per_task set. cluster: a power of 2, 2..DL_PLAN_MAX_CLUSTER,
 * cluster x warps <= DL_PLAN_MAX_CLUSTER_SEGS; per_task 1..DL_PLAN_MAX_CLUSTERS_PER_TASK. Returns 0 or dl_fail(). */
#define DL_PLAN_MAX_CLUSTER 16
#define DL_PLAN_AUTO_CLUSTER 8 /* the largest the rule takes (portable sizes; 16 only when asked) */
#define DL_PLAN_MAX_CLUSTER_SEGS 32
#define DL_PLAN_MAX_CLUSTERS_PER_TASK 32
int dl_plan_build_cluster(int B, int Hkv, const int32_t *seq_len, int tile, int warps, int cluster, int per_task,
                          dl_plan *p);
/* The shape dl_plan_build_cluster should take, into *cluster (C) and *per_task (K); both 0 where no task has two
 * tiles or no cluster fits. C: `asked` (2, 4, 8, 16) or, asked 0, the largest of 8, 4, 2 with every task's cluster
 * resident at once (tasks x C <= max_ctas) and C x warps <= DL_PLAN_MAX_CLUSTER_SEGS; K: as many clusters a task as
 * fit at once (max_ctas / (tasks x C), at least 1), but no more than give each warp of the longest task a tile.
 * Ragged lengths are not weighed: a short request's clusters end early. Examples on 132 SMs x 2 CTAs of 2 warps,
 * llama3-8B L32768: B4 (32 tasks) C 8, K 1 (256 CTAs); B1 (8 tasks) C 8, K 4 (256 CTAs). Returns 0. */
int dl_plan_cluster_shape(int B, int Hkv, const int32_t *seq_len, int tile, int warps, int max_ctas, int asked,
                          int *cluster, int *per_task);
/* The share of the busiest CTA (issue 10, 2026-12-06: on the H200 the CTAs' exits at llama3-8B B4 L32768 follow
 * their planned tiles, rank correlation 0.72): *most = the most tokens the static slots of any one CTA hold (slot s
 * is CTA s / warps; pool slots are claimed at run time and not counted), *mean = the mean over the CTAs that hold
 * any. A token counts once per KV head (task). E.g. bf16-hw-stream's apportioned plan at B4 L32768 (264 CTAs of 2
 * warps): 4096 against 3971.9 (+3.1 %). Returns 0 or dl_fail() (out of memory). */
int dl_plan_cta_tokens(const dl_plan *p, int Hkv, const int32_t *seq_len, int64_t *most, double *mean);
/* The most segments any one task was cut into (1: no task is split). */
int dl_plan_max_task_segs(const dl_plan *p);

/* Who merges the partials of a split task (issue 10, attempt #15; gpu/NOTES.md):
 * the warp that finishes the task's last segment (TICKET), or a second kernel
 * (KERNEL); AUTO takes the kernel when some task has at least
 * DL_PLAN_MERGE_KERNEL_SEGS segments. Measured on the H200 (2026-12-03,
 * results/h200_2026-12-03c/): with tasks of at most 3 segments (llama3-8B B64
 * L1024, the 70B shape B64 L4096, B128 L4096 bf16) the kernel cost 2.7-7.8 us
 * (its launch, and the merge after the last tile instead of beside other warps'
 * work); with 4-6 (B16 L8192) it saved 3.9 us, with ~25 (B4 L32768) 12.6-14.7,
 * with 32-96 (B1 L32768) 13.2-36.5.
 * With the kernel a task may be cut finer (DL_PLAN_MAX_SEGS_KERNEL segments
 * instead of DL_PLAN_MAX_SEGS_TICKET: one warp merging 64 was slower than 32). */
enum { DL_MERGE_AUTO = -1, DL_MERGE_TICKET = 0, DL_MERGE_KERNEL = 1, DL_MERGE_CLUSTER = 2 };
#define DL_PLAN_MERGE_KERNEL_SEGS 4
#define DL_PLAN_MAX_SEGS_TICKET 32
#define DL_PLAN_MAX_SEGS_KERNEL 96
/* The mode named by the DL_STREAM_MERGE value s (NULL or "auto": AUTO; "cluster": the clusters' plan,
 * dl_plan_build_cluster, in a make STREAM_CLUSTER=1 build). Returns
 * 0, or dl_fail() naming the variable and the value. */
int dl_plan_merge_mode(const char *s, int *mode);
/* The merge a launch of plan p runs in mode (AUTO resolved; TICKET when no task
 * is split, since then there is nothing to merge). */
int dl_plan_pick_merge(int mode, const dl_plan *p);
/* The merge kernel's CTAs per (task, query head), C (issue 10 attempt #35, DL_STREAM_MERGE_SPLIT; each CTA
 * merges head_dim / C of the head's dims): asked 1, 2 or 4 is taken; asked 0 (auto) takes the fewest of 1, 2, 4
 * that give the kernel at least one CTA per SM over heads = tasks x query heads per KV head (4 when none does).
 * Measured on the H200 (2026-12-04, results/h200_2026-12-04e/): B1 L32768 (32 heads) 36.42 us at C = 1, 35.39 at
 * 2, 35.36 at 4; B4 (128) 86.40 / 86.46 / 87.90 at 1 / 2 / 4; B16 L8192 (512) 87.26 / 89.63 / 94.66. Returns 0
 * with *split set, or dl_fail() naming the knob and value (asked not 0, 1, 2, 4; head_dim not a multiple of 4C). */
int dl_plan_merge_split(int asked, int64_t heads, int sms, int head_dim, int *split);
/* Frees the host arrays (not p->dev). */
void dl_plan_free(dl_plan *p);

#ifdef __cplusplus
}
#endif
#endif
