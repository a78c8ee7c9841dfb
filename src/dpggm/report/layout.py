"""Where a graph's variables are drawn (post-processing of the released edges only).

A layout is a function of public things alone: the released edges, the variables' names
and order, and groups the user declares (say, the scales of a questionnaire). Nothing in it
is random at run time: the same edges and groups always give the same picture, whatever
seed the release was drawn with.

* ``"spring"`` (the default): a force-directed layout (Fruchterman–Reingold, through
  NetworkX) of each connected part of the graph, started from its spectral layout (the
  Laplacian's eigenvectors: deterministic), so that joined variables sit close together
  and a chain stays a chain, then a few steps of stress majorization that even out the
  distances within dense clusters. The parts are packed side by side, the largest first;
  variables without an edge sit in rows below them, in the order of the data's columns.
* ``"circle"``: every variable on a circle in the order of the data's columns, the first at
  the top and the others clockwise -- the same place in every release over these columns,
  for comparing releases by eye.
* ``"groups"``: one cluster per declared group (each laid out as ``"spring"``), the
  clusters around a circle in the order their first variable appears in the data.

Positions are in units of about one edge: in a ``"spring"`` drawing a variable's nearest
neighbour is typically one unit away (and never closer than 0.75), and variables without
an edge sit one unit apart.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["LAYOUTS", "OTHER_GROUP", "graph_layout", "groups_from_file",
           "groups_from_pattern", "node_groups", "pair_distance_ratio"]

#: The layouts :func:`graph_layout` draws.
LAYOUTS = ("spring", "circle", "groups")
#: The group of a variable that no declared group names.
OTHER_GROUP = "other"
#: The gap between two packed parts of a drawing, in units of an edge.
_GAP = 1.2
#: Fruchterman–Reingold's steps (the layout converges well before at 150 variables).
_ITERATIONS = 300


def node_groups(groups: Mapping[str, Any] | Sequence[Any] | None,
                names: Sequence[str]) -> list[str] | None:
    """Each variable's group as text (:data:`OTHER_GROUP` where none is declared), from a
    mapping ``name -> group`` or a sequence aligned with ``names``; ``None`` without
    groups.

    Raises
    ------
    ValueError
        A sequence of the wrong length, or a mapping that names none of the variables.
    """
    if groups is None:
        return None
    names = [str(n) for n in names]
    if isinstance(groups, Mapping):
        known = {str(k): v for k, v in groups.items()}
        if names and not set(names) & set(known):
            raise ValueError(f"groups names none of the {len(names)} variables (for example "
                             f"{names[0]!r}); give a mapping of variable names to groups")
        values = [known.get(name) for name in names]
    else:
        values = list(groups)
        if len(values) != len(names):
            raise ValueError(f"groups must have one entry per variable ({len(names)}); got "
                             f"{len(values)}")
    return [OTHER_GROUP if value is None or str(value).strip() == "" else str(value)
            for value in values]


def groups_from_file(path: Path | str) -> dict[str, str]:
    """A declared grouping of the variables, read from a file.

    * ``.json``: an object ``{"variable": "group", ...}`` or ``{"group": ["variable",
      ...], ...}``;
    * any other file: a table with a header row whose first two columns are the variable
      and its group (comma, semicolon or tab separated), as a spreadsheet exports it.

    Raises
    ------
    ValueError
        The file is not one of these, or names a variable twice with different groups.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text; save the groups as a UTF-8 CSV or "
                         "JSON file") from None
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path} must hold a JSON object: variable -> group, or group "
                             "-> list of variables")
        pairs = []
        for key, value in data.items():
            if isinstance(value, list):
                pairs += [(str(item), str(key)) for item in value]
            elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
                pairs.append((str(key), str(value)))
            else:
                raise ValueError(f"{path}: the entry {key!r} must be a group name or a list "
                                 f"of variables; got {value!r}")
    else:
        pairs = _pairs_from_table(text, path)
    out: dict[str, str] = {}
    for name, group in pairs:
        if out.get(name, group) != group:
            raise ValueError(f"{path} puts {name!r} in two groups: {out[name]!r} and "
                             f"{group!r}")
        out[name] = group
    if not out:
        raise ValueError(f"{path} declares no group")
    return out


def _pairs_from_table(text: str, path: Path) -> list[tuple[str, str]]:
    import csv

    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        raise ValueError(f"{path} must have a header row and one row per variable "
                         "(variable, group)")
    try:
        dialect = csv.Sniffer().sniff(lines[0], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    rows = list(csv.reader(lines, dialect))
    pairs = []
    for number, row in enumerate(rows[1:], start=2):
        cells = [cell.strip() for cell in row]
        if len(cells) < 2 or not cells[0]:
            raise ValueError(f"{path}, line {number}: expected a variable and its group; got "
                             f"{','.join(row)!r}")
        pairs.append((cells[0], cells[1]))
    return pairs


def groups_from_pattern(pattern: str, names: Sequence[str]) -> dict[str, str]:
    """Groups read off the variables' names by a regular expression: a variable's group is
    the first parenthesised part of the pattern's first match in its name (or the whole
    match, without parentheses). ``"^[A-Za-z]+"`` groups ``anx1, anx2, dep1`` into
    ``anx`` and ``dep``; ``"^(.*)_\\d+$"`` groups ``sleep_1, sleep_2``. A name the pattern
    does not match has no group.

    Raises
    ------
    ValueError
        The pattern is not a regular expression, or matches no name.
    """
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"the group pattern {pattern!r} is not a regular expression: "
                         f"{exc}") from None
    out = {}
    for name in names:
        found = compiled.search(str(name))
        if found is None:
            continue
        group = found.group(1) if compiled.groups else found.group(0)
        if group:
            out[str(name)] = group
    if not out:
        raise ValueError(f"the group pattern {pattern!r} matches none of the variables' "
                         f"names (for example {str(names[0])!r})" if len(names) else
                         f"the group pattern {pattern!r} matches no name")
    return out


def _pairs(edges: Any, names: Sequence[str]) -> np.ndarray:
    """The (i, j) index pairs of the edges between two distinct known variables."""
    index = {str(name): j for j, name in enumerate(names)}
    if edges is None or len(edges) == 0:
        return np.zeros((0, 2), dtype=int)
    pairs = []
    for a, b in zip(edges["source"], edges["target"]):
        i, j = index.get(str(a)), index.get(str(b))
        if i is not None and j is not None and i != j:
            pairs.append((min(i, j), max(i, j)))
    return np.array(sorted(set(pairs)), dtype=int).reshape(-1, 2)


def graph_layout(edges: Any, names: Sequence[str], *, layout: str = "spring",
                 groups: Mapping[str, Any] | Sequence[Any] | None = None) -> np.ndarray:
    """The positions at which a graph's variables are drawn.

    Parameters
    ----------
    edges : DataFrame
        The released edge list (``source``, ``target``; other columns are not used).
    names : sequence of str
        Every variable, in the order of the data's columns.
    layout : {"spring", "circle", "groups"}, default="spring"
        See the module's description.
    groups : mapping or sequence, optional
        Each variable's declared group (``name -> group``, or one entry per variable);
        required by ``layout="groups"``.

    Returns
    -------
    ndarray of shape (len(names), 2)
        ``x, y`` of each variable, ``y`` upwards, in units of about one edge.

    Privacy
    -------
    Post-processing: a function of the released edges and of the declared groups only, and
    deterministic (no random seed, least of all the release's).
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}; got {layout!r}")
    names = [str(n) for n in names]
    p = len(names)
    labels = node_groups(groups, names)
    if layout == "groups" and labels is None:
        raise ValueError("layout='groups' needs the variables' groups (groups=...)")
    if p == 0:
        return np.zeros((0, 2))
    pairs = _pairs(edges, names)
    key = tuple(map(tuple, pairs.tolist()))
    # A report and its picture files draw the same graph: laid out once.
    return _layout_of(key, p, layout, tuple(labels) if labels is not None else None).copy()


@functools.lru_cache(maxsize=8)
def _layout_of(key: tuple[tuple[int, int], ...], p: int, layout: str,
               labels: tuple[str, ...] | None) -> np.ndarray:
    pairs = np.array(key, dtype=int).reshape(-1, 2)
    if layout == "circle":
        return _circle(p)
    if layout == "spring":
        return _packed(np.arange(p), pairs)
    return _grouped(pairs, list(labels))


def _circle(p: int) -> np.ndarray:
    """The first variable at the top, the others clockwise, neighbours one unit apart."""
    radius = max(1.0, p / (2 * math.pi))
    angles = math.pi / 2 - 2 * math.pi * np.arange(p) / p
    return radius * np.column_stack([np.cos(angles), np.sin(angles)])


def _components(nodes: np.ndarray, pairs: np.ndarray) -> list[np.ndarray]:
    """The connected parts among ``nodes`` (the edges ``pairs`` between them), each in the
    order of the data's columns; the largest first, ties by their first column."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    local = {int(node): k for k, node in enumerate(nodes)}
    inside = [(local[i], local[j]) for i, j in pairs if i in local and j in local]
    m = len(nodes)
    rows = [a for a, _ in inside]
    cols = [b for _, b in inside]
    matrix = coo_matrix((np.ones(len(inside)), (rows, cols)), shape=(m, m))
    count, label = connected_components(matrix, directed=False)
    parts = [nodes[label == k] for k in range(count)]
    return sorted(parts, key=lambda part: (-len(part), int(part[0])))


def _spring(part: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """A force-directed layout of one connected part, its typical edge one unit long,
    turned so that its longer side lies horizontally."""
    m = len(part)
    if m == 1:
        return np.zeros((1, 2))
    if m == 2:
        return np.array([[-0.5, 0.0], [0.5, 0.0]])
    import networkx as nx

    local = {int(node): k for k, node in enumerate(part)}
    links = [(local[i], local[j]) for i, j in pairs if i in local and j in local]
    degree = np.zeros(m)
    for a, b in links:
        degree[a] += 1
        degree[b] += 1
    graph = nx.Graph()
    graph.add_nodes_from(range(m))
    # A hub's edges pull more weakly (weight 1 / the larger degree), so that its many
    # neighbours spread out on a ring around it instead of piling onto one spot.
    graph.add_edges_from((a, b, {"weight": 1.0 / max(degree[a], degree[b])})
                         for a, b in links)
    # The spectral layout (the graph Laplacian's eigenvectors) is a deterministic start
    # that already unfolds chains and separates clusters; the forces then even out the
    # distances. Variables the eigenvectors cannot tell apart (the leaves of a star) start
    # a little apart, by their column order, or no force would ever separate them.
    laplacian = -np.asarray(nx.to_numpy_array(graph, weight=None))
    np.fill_diagonal(laplacian, degree)
    # A dense symmetric eigensolver: deterministic, unlike an iterative one's random start.
    _, vectors = np.linalg.eigh(laplacian)
    xy = vectors[:, 1:3]
    xy = xy / max(float(np.abs(xy).max()), 1e-12)
    turn = np.arange(m) * 2.399963229728653  # the golden angle: no two offsets align
    xy = xy + 1e-3 * np.column_stack([np.cos(turn), np.sin(turn)])
    start = {k: xy[k] for k in range(m)}
    position = nx.spring_layout(graph, pos=start, iterations=_ITERATIONS, seed=0,
                                method="force")
    xy = _normalised(np.array([position[k] for k in range(m)], dtype=float))
    return _spread(_normalised(_stress_refined(xy, links, degree)))


#: Steps of stress majorization after the forces: enough to even out the distances in a
#: dense cluster (which the forces squeeze while they stretch the links between
#: clusters), too few to straighten a long chain into one line (measured on chains,
#: hubs, linked clusters and trees of 100-150 variables).
_STRESS_STEPS = 30


def _stress_refined(xy: np.ndarray, links: list[tuple[int, int]],
                    degree: np.ndarray) -> np.ndarray:
    """A few steps of stress majorization (Gansner, Koren & North 2004) from ``xy``:
    each pair of variables is drawn towards its distance in the graph, weighted by the
    inverse square of that distance, so that near neighbours sit at even distances. An
    edge of a hub is longer (0.15 units per edge of its busier end, at least one unit),
    so that a hub's neighbours have room around it."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import shortest_path

    m = len(xy)
    lengths = [max(1.0, 0.15 * max(degree[a], degree[b])) for a, b in links]
    rows = [a for a, _ in links]
    cols = [b for _, b in links]
    graph = coo_matrix((lengths, (rows, cols)), shape=(m, m)).tocsr()
    target = shortest_path(graph, directed=False)
    weight = np.zeros_like(target)
    off = target > 0
    weight[off] = target[off] ** -2.0
    total = weight.sum(axis=1)[:, None]
    for _ in range(_STRESS_STEPS):
        diff = xy[:, None, :] - xy[None, :, :]
        distance = np.maximum(np.linalg.norm(diff, axis=-1), 1e-9)
        pull = weight * target / distance
        xy = (weight @ xy + pull.sum(axis=1)[:, None] * xy - pull @ xy) / total
    return xy


def _spread(xy: np.ndarray, minimum: float = 0.75, rounds: int = 60) -> np.ndarray:
    """Variables closer than ``minimum`` (in edge units) pushed apart, half the shortfall
    each way per round: room for their labels where the forces left a tight spot (the tail
    of a long chain, the leaves of a hub)."""
    m = len(xy)
    xy = xy.copy()
    turn = np.arange(m) * 2.399963229728653
    nudge = np.column_stack([np.cos(turn), np.sin(turn)]) * 1e-6
    for _ in range(rounds):
        delta = xy[:, None, :] - xy[None, :, :]
        distance = np.linalg.norm(delta, axis=-1)
        np.fill_diagonal(distance, 1e9)
        close = distance < minimum
        if not close.any():
            break
        # Coincident points part along a fixed direction of their own (the golden angle).
        delta = np.where((distance < 1e-9)[..., None], nudge[:, None, :], delta)
        distance = np.maximum(distance, 1e-9)
        push = np.where(close, (minimum - distance) / 2 / distance, 0.0)
        xy += np.einsum("ijk,ij->ik", delta, push) / np.maximum(close.sum(axis=1), 1)[:, None]
    return xy


def _normalised(xy: np.ndarray) -> np.ndarray:
    """Centered, scaled so that the median distance from a variable to its nearest one is
    one unit (a dense cluster is widened as much as a chain: room for the labels), turned
    to lie horizontally, with its first variable on the left and at the bottom (so that
    the result does not depend on an eigenvector's sign)."""
    xy = xy - xy.mean(axis=0)
    distance = np.linalg.norm(xy[:, None, :] - xy[None, :, :], axis=-1)
    np.fill_diagonal(distance, np.inf)
    nearest = float(np.median(distance.min(axis=1)))
    if nearest > 0:
        xy = xy / nearest
    _, _, axes = np.linalg.svd(xy, full_matrices=False)
    xy = xy @ axes.T
    for k in range(2):
        if xy[0, k] > 0:
            xy[:, k] = -xy[:, k]
    return xy


def _packed(nodes: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """``"spring"`` for the variables ``nodes``: each connected part laid out, the parts
    packed in rows (the largest first), isolated variables in rows below them. Returns the
    positions of ``nodes`` in their order, centered."""
    parts = _components(nodes, pairs)
    joined = [part for part in parts if len(part) > 1]
    alone = np.sort(np.concatenate([part for part in parts if len(part) == 1])
                    if len(joined) < len(parts) else np.zeros(0, dtype=int))
    blocks = [(part, _spring(part, pairs)) for part in joined]
    if len(alone):
        columns = max(1, math.ceil(math.sqrt(len(alone) * 2.5)))
        if joined:
            width = max(np.ptp(blocks[0][1][:, 0]) + 1.0, 1.0)
            columns = max(columns, int(width) + 1)
        grid = np.array([[k % columns, -(k // columns)] for k in range(len(alone))],
                        dtype=float)
        blocks.append((alone, grid))
    position = _shelf_pack([xy for _, xy in blocks])
    out = np.zeros((len(nodes), 2))
    where = {int(node): k for k, node in enumerate(nodes)}
    for (members, _), xy in zip(blocks, position):
        for node, point in zip(members, xy):
            out[where[int(node)]] = point
    return out - (out.min(axis=0) + out.max(axis=0)) / 2


def _shelf_pack(blocks: list[np.ndarray]) -> list[np.ndarray]:
    """The blocks moved into rows, left to right and top down, a row no wider than about
    the square the blocks would fill (or the widest block); the last block (isolated
    variables, if any) starts its own row."""
    sizes = [np.ptp(xy, axis=0) if len(xy) > 1 else np.zeros(2) for xy in blocks]
    area = sum((w + _GAP) * (h + _GAP) for w, h in sizes)
    limit = max(math.sqrt(area) * 1.15, max(w for w, _ in sizes) + _GAP)
    out = []
    x = y = row_height = 0.0
    for k, (xy, (w, h)) in enumerate(zip(blocks, sizes)):
        last_alone = k == len(blocks) - 1 and k > 0 and w > 0 and np.allclose(
            xy[:, 1], np.round(xy[:, 1]))
        if x > 0 and (x + w > limit or last_alone):
            x = 0.0
            y -= row_height + _GAP
            row_height = 0.0
        low = xy.min(axis=0)
        top = xy[:, 1].max()
        out.append(xy - [low[0], top] + [x, y])
        x += w + _GAP
        row_height = max(row_height, h)
    return out


def _grouped(pairs: np.ndarray, labels: list[str]) -> np.ndarray:
    """``"groups"``: each group laid out as ``"spring"``, the groups around a circle (in the
    order of their first variable), each taking an arc as wide as it is."""
    order: list[str] = []
    for label in labels:
        if label not in order:
            order.append(label)
    members = {g: np.array([j for j, label in enumerate(labels) if label == g])
               for g in order}
    inner = {g: _packed(members[g], pairs) for g in order}
    radii = {g: 0.5 * float(np.hypot(*np.ptp(xy, axis=0))) + 0.5 if len(xy) > 1 else 0.5
             for g, xy in inner.items()}
    out = np.zeros((len(labels), 2))
    if len(order) == 1:
        out[members[order[0]]] = inner[order[0]]
        return out
    # Each group takes a share of the turn in proportion to its size; the big circle is
    # just wide enough that neighbouring groups' circles do not touch.
    spans = np.array([2 * radii[g] + _GAP for g in order])
    shares = 2 * math.pi * spans / spans.sum()
    centers = math.pi / 2 - (np.cumsum(shares) - shares / 2)
    big = 0.0
    for k in range(len(order)):
        nxt = (k + 1) % len(order)
        apart = min((shares[k] + shares[nxt]) / 2, math.pi)
        need = radii[order[k]] + radii[order[nxt]] + _GAP
        big = max(big, need / (2 * math.sin(apart / 2)))
    for g, angle in zip(order, centers):
        out[members[g]] = inner[g] + big * np.array([math.cos(angle), math.sin(angle)])
    return out


def pair_distance_ratio(positions: np.ndarray, edges: Any, names: Sequence[str]) -> float:
    """The mean distance between joined variables over the mean distance between the
    others, in a drawing: below 1 when the layout keeps joined variables together. NaN
    when there is no edge or no pair without one."""
    positions = np.asarray(positions, dtype=float)
    p = len(names)
    pairs = _pairs(edges, names)
    joined = np.zeros((p, p), dtype=bool)
    joined[pairs[:, 0], pairs[:, 1]] = True
    upper = np.triu(np.ones((p, p), dtype=bool), 1)
    distance = np.linalg.norm(positions[:, None, :] - positions[None, :, :], axis=-1)
    near, far = distance[joined & upper], distance[~joined & upper]
    if near.size == 0 or far.size == 0:
        return float("nan")
    return float(near.mean() / far.mean())
