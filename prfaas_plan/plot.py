"""Figures (matplotlib, imported only here): the paper's figure 5 for any scenario, and a
simulation's time series.

Figure 5, left: the prefill bound (min of the PrfaaS, link and PD-P bounds) and the decode
bound against N_p at the plan's threshold. Right: the PrfaaS bound (min of compute and link)
and the PD-P bound against t. The optimum is marked on both. Token axes are in K = 1,024
tokens, as everywhere in prfaas-plan.

Each function returns a matplotlib Figure; ``save`` writes one through an
``OutputFiles`` set, so a figure is written only with the command's other outputs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import PlanInputError, shorten
from .planner.sweep import sweep_np, sweep_threshold
from .units import TOKENS_PER_K
from .yamlio import OutputFiles

FORMATS = (".png", ".svg", ".pdf")
K_LABEL = "K tokens (1K = 1,024)"


def _values(rows: list[dict], key: str) -> np.ndarray:
    return np.array([np.nan if r[key] is None else r[key] for r in rows], dtype=float)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure5(data, t_max_tokens: float | None = None):
    """Figure 5 of ``data`` (an ``api.Figure5Data``: inputs, threshold table, solution)."""
    plt = _pyplot()
    inputs, table, sol = data.inputs, data.table, data.solution

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    rows = sweep_np(inputs, table, sol)
    n_p = _values(rows, "n_p")
    left.plot(n_p, _values(rows, "prefill_bound_rps"), marker="o", label="prefill bound")
    left.plot(n_p, _values(rows, "decode_bound_rps"), marker="s", label="decode bound")
    left.axvline(sol.n_p, color="grey", ls=":", lw=1)
    left.plot([sol.n_p], [sol.lambda_max], "k*", ms=12, label=f"optimum N_p={sol.n_p}, Λ={sol.lambda_max:.2f}")
    left.set(
        xlabel=f"N_p (N_d = {sol.n_p + sol.n_d} - N_p)",
        ylabel="throughput bound (req/s)",
        title=f"(a) bounds vs N_p at t = {sol.threshold_tokens:,.0f} tokens",
    )
    left.legend(fontsize=8)

    t_rows = sweep_threshold(inputs, table, sol)
    t = _values(t_rows, "threshold_tokens")
    keep = t <= (t_max_tokens or max(60 * TOKENS_PER_K, 2 * sol.threshold_tokens))
    k = TOKENS_PER_K
    right.plot(t[keep] / k, _values(t_rows, "prfaas_bound_rps")[keep], label="PrfaaS bound Θ_prfaas/p")
    right.plot(t[keep] / k, _values(t_rows, "pd_prefill_bound_rps")[keep], label="PD-P bound Θ_pdp/(1-p)")
    right.axhline(float(t_rows[0]["pd_decode_bound_rps"]), color="grey", ls="--", lw=1, label="decode bound")
    right.plot(
        [sol.threshold_tokens / k],
        [sol.lambda_max],
        "k*",
        ms=12,
        label=f"optimum t={sol.threshold_tokens / k:.1f}K, Λ={sol.lambda_max:.2f}",
    )
    top = 3 * max(sol.lambda_max, 1e-9)
    right.set(
        xlabel=f"threshold t ({K_LABEL})",
        ylabel="throughput bound (req/s)",
        ylim=(0, top),
        title=f"(b) bounds vs t at N_prfaas={sol.n_prfaas}, N_p={sol.n_p}, N_d={sol.n_d}",
    )
    right.legend(fontsize=8)
    fig.suptitle(f"{inputs.name}: {inputs.model.name}")
    return fig


def save(fig, out: OutputFiles, path: str, field: str = "path") -> None:
    """Write ``fig`` to ``path`` (format from its suffix) as part of ``out``, then close it;
    errors name ``field``."""
    check_format(path, field)
    try:
        out.write(path, lambda tmp: fig.savefig(tmp, dpi=130), field)
    finally:
        _pyplot().close(fig)


def check_format(path: str, field: str) -> None:
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise PlanInputError(f"unsupported plot format {shorten(suffix or path, 40)!r} (use {', '.join(FORMATS)})", field=field)


def timeseries_figure(result):
    """Queues, egress against link capacity, and the routing threshold over simulated time."""
    plt = _pyplot()
    ts = result.timeseries
    t = ts["time_s"]
    fig, (q, e, th) = plt.subplots(3, 1, figsize=(10, 7.5), sharex=True, constrained_layout=True)
    for key, label in (
        ("prfaas_queue_requests", "PrfaaS queue"),
        ("pdp_queue_requests", "PD-P queue"),
        ("decode_queue_requests", "decode queue"),
    ):
        q.plot(t, ts[key], lw=1, label=label)
    q.set(ylabel="waiting requests")
    q.legend(fontsize=8)
    e.plot(t, ts["egress_gbps"], lw=1, label="egress")
    e.plot(t, ts["offered_egress_gbps"], lw=0.8, alpha=0.6, label="offered egress")
    e.plot(t, ts["link_capacity_gbps"], "k--", lw=1, label="link capacity")
    e.set(ylabel="Gbps")
    e.legend(fontsize=8)
    th.plot(t, ts["threshold_tokens"] / TOKENS_PER_K, lw=1)
    th.set(ylabel=f"threshold ({K_LABEL})", xlabel="simulated time (s)")
    cfg = result.config
    fig.suptitle(f"{result.deployment.name}: {cfg.rate_rps:.2f} req/s, {cfg.arrivals} arrivals, {cfg.policy} policy")
    return fig


def compare_figure(comparison):
    """The options of a comparison: provisioned $/hour against req/s served (Lambda_max, or the
    SLO goodput), coloured by TTFT P90 at the operating rate; the 2-D front joined, the options
    on the table's Pareto front (over ``planner.compare.front_criteria``, the rule written in the
    legend: ``views.compare.front_note``) starred. Each point carries its rank in the compare table (options at the
    same point share one label, ``1,2,3``), placed where it overlaps no other label and no point
    (``place_labels``); a key beside the axes names the option of each rank."""
    import textwrap

    from .views.compare import front_note

    plt = _pyplot()
    fig, (ax, key_ax) = plt.subplots(1, 2, figsize=(11, 5.5), gridspec_kw={"width_ratios": [3, 1.1]})
    key_ax.axis("off")
    ranks, rank = {}, 0
    for i, r in enumerate(comparison.results):
        rank += r.feasible
        ranks[i] = rank
    rows = [(i, r) for i, r in enumerate(comparison.results) if r.feasible and r.usd_per_hour is not None]
    groups: dict[tuple[float, float], list[int]] = {}
    if rows:
        cost = np.array([r.usd_per_hour for _, r in rows])
        rate = np.array([r.capacity_rps for _, r in rows])
        ttft = np.array([np.nan if r.ttft_p90_s is None else r.ttft_p90_s for _, r in rows])
        dots = ax.scatter(cost, rate, c=ttft, cmap="viridis_r", s=40, zorder=3)
        fig.colorbar(dots, ax=ax, label="TTFT P90 at the operating rate (s)")
        # the 2-D front over ($/hour, req/s) as a staircase; points on the table's front starred
        steps, best = [], -np.inf
        for x, y in sorted(zip(cost, rate), key=lambda xy: (xy[0], -xy[1])):
            if y > best:
                steps.append((x, y))
                best = y
        ax.step(
            [x for x, _ in steps], [y for _, y in steps], "k--", where="post", lw=1, zorder=2, label="front over $/hour and req/s"
        )
        front = [(r.usd_per_hour, r.capacity_rps) for i, r in rows if i in comparison.pareto]
        ax.scatter(
            [f[0] for f in front],
            [f[1] for f in front],
            marker="*",
            s=160,
            facecolors="none",
            edgecolors="k",
            zorder=4,
            label=textwrap.fill(front_note(comparison), 46),
        )
        for i, r in rows:
            groups.setdefault((round(r.usd_per_hour, 6), round(r.capacity_rps, 9)), []).append(ranks[i])
        ax.margins(0.12)
    ax.set_xlabel("provisioned cost ($/hour)")
    ax.set_ylabel("requests/s served")
    ax.set_title(
        f"{comparison.name}: {len(comparison.results)} options, {len(rows)} feasible and priced ({comparison.objective})"
    )
    ax.grid(alpha=0.3)
    key = [f"{ranks[i]:>3}{'*' if i in comparison.pareto else ' '} {r.option.label}" for i, r in rows]
    if key:
        per_column = 40
        columns = ["\n".join(key[k : k + per_column]) for k in range(0, len(key), per_column)]
        key_ax.text(
            0,
            1,
            "# (rank in the table; * Pareto front)\n" + columns[0],
            va="top",
            ha="left",
            family="monospace",
            fontsize=7 if len(key) <= 20 else 6,
            transform=key_ax.transAxes,
        )
        for c, text in enumerate(columns[1:], start=1):
            key_ax.text(c * 0.5, 1, "\n" + text, va="top", ha="left", family="monospace", fontsize=6, transform=key_ax.transAxes)
    handles, names = ax.get_legend_handles_labels()
    if handles:  # beside the axes, where it hides no point or label
        key_ax.legend(handles, names, loc="lower left", fontsize=7, frameon=False)
    fig.tight_layout()
    place_labels(ax, [(x, y, ",".join(map(str, sorted(g)))) for (x, y), g in groups.items()])
    return fig


LABEL_GID = "option-label"  # the gid of the rank labels (tests find them by it)
_DIRECTIONS = [(1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1)]
_OFFSETS_PT = [(dx * r, dy * r) for r in (5, 10, 16) for dx, dy in _DIRECTIONS] + [
    (r * np.cos(a), r * np.sin(a)) for r in (24, 34, 46, 60, 76, 95, 120) for a in np.linspace(0, 2 * np.pi, 24, endpoint=False)
]
_POINT_PX = 9  # half the side of the box kept clear around each point (a star's radius), pixels at 100 dpi
_GAP_PX = 3  # the space kept between two labels, pixels at 100 dpi
_LEADER_PT = 16  # labels this far from their point or further get a leader line


def place_labels(ax, labels: list[tuple[float, float, str]], fontsize: float = 8) -> list:
    """Annotate each (x, y, text) at the first offset of ``_OFFSETS_PT`` (nearest first: eight
    directions per distance, then rings of 24) where its box, grown by ``_GAP_PX``, overlaps no
    label placed before it and no point's box, and stays inside the axes; a label with no free
    place takes the one overlapping least. A label far from its point, or nearer another point
    than its own, gets a leader line. Call after the layout is final (the text's size is measured
    by the figure's renderer). Returns the annotations."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    scale, px_per_pt = fig.dpi / 100.0, fig.dpi / 72.0
    points = np.array([ax.transData.transform((x, y)) for x, y, _ in labels]).reshape(-1, 2)
    half = _POINT_PX * scale
    taken = [np.hstack([points - half, points + half])]  # boxes (x0, y0, x1, y1) no label may cover
    frame = ax.get_window_extent(renderer)
    offsets = np.array(_OFFSETS_PT)
    align = [_alignment(o) for o in _OFFSETS_PT]
    fx = np.array([{"left": 0.0, "right": -1.0, "center": -0.5}[a["ha"]] for a in align])
    fy = np.array([{"bottom": 0.0, "top": -1.0, "center": -0.5}[a["va"]] for a in align])
    texts = []
    for k in sorted(range(len(labels)), key=lambda j: (-labels[j][1], labels[j][0])):  # top left first
        x, y, text = labels[k]
        probe = ax.text(0, 0, text, fontsize=fontsize)
        size = probe.get_window_extent(renderer)
        probe.remove()
        x0 = points[k, 0] + offsets[:, 0] * px_per_pt + fx * size.width
        y0 = points[k, 1] + offsets[:, 1] * px_per_pt + fy * size.height
        boxes = np.column_stack([x0, y0, x0 + size.width, y0 + size.height])
        gap = _GAP_PX * scale
        grown = boxes + np.array([-gap, -gap, gap, gap])
        others = np.vstack(taken)
        cost = _overlaps(grown, others).sum(axis=1) + _area(grown) - _overlaps(grown, _frame(frame))[:, 0]
        free = np.flatnonzero(cost <= 0)
        pick = int(free[0]) if free.size else int(np.argmin(cost))
        best, box = _OFFSETS_PT[pick], boxes[pick]
        centre = np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2])
        distance = np.hypot(*(points - centre).T)
        leader = max(map(abs, best)) >= _LEADER_PT or bool(np.any(np.delete(distance, k) < distance[k]))
        arrow = {"arrowprops": {"arrowstyle": "-", "lw": 0.6, "color": "0.3", "shrinkA": 0, "shrinkB": 2}} if leader else {}
        texts.append(
            ax.annotate(
                text,
                (x, y),
                xytext=best,
                textcoords="offset points",
                fontsize=fontsize,
                gid=LABEL_GID,
                zorder=5,
                **_alignment(best),
                **arrow,
            )
        )
        taken.append(box[None, :])
    return texts


def _overlaps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The areas boxes ``a`` (n x 4: x0, y0, x1, y1) share with boxes ``b`` (m x 4), n x m (0 when
    they only touch)."""
    w = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    h = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    return np.clip(w, 0, None) * np.clip(h, 0, None)


def _area(a: np.ndarray) -> np.ndarray:
    return (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])


def _frame(bbox) -> np.ndarray:
    return np.array([[bbox.x0, bbox.y0, bbox.x1, bbox.y1]])


def _alignment(offset: tuple[float, float]) -> dict:
    """The text's anchor for an offset: the corner or side nearest the point."""
    dx, dy = (0.0 if abs(v) < 1e-9 else v for v in offset)
    return {
        "ha": "left" if dx > 0 else ("right" if dx < 0 else "center"),
        "va": "bottom" if dy > 0 else ("top" if dy < 0 else "center"),
    }
