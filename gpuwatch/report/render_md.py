"""The report as Markdown, for people: verdict first, then checks, remedies, details, gaps."""

from __future__ import annotations

import time

from gpuwatch.collectors.environment import Environment
from gpuwatch.diagnosis.evidence import EVIDENCE_MARKS, FACT_MARKS, count
from gpuwatch.diagnosis.timeline import STARTING
from gpuwatch.model.stacks import LABEL_WORDS
from gpuwatch.model.stacks import ROLE_TITLES as ROLE_WORDS
from gpuwatch.model.values import Unsupported
from gpuwatch.model.verdict import STAGE_TITLES
from gpuwatch.report.checks_host import cpulist
from gpuwatch.model.field_words import words
from gpuwatch.report.model import FAIL, NOT_CHECKED, PASS, STATUSES, STOPPED_EARLY, WARN, Report
from gpuwatch.report.words import REMEDIES_READ_AT, epochs_at_end, epochs_none, headline, no_remedy_words, stage_gain, too_short
from gpuwatch.untrusted import clean, markdown, markdown_code

STATUS_WORD = {PASS: "PASS", WARN: "WARN", FAIL: "FAIL", NOT_CHECKED: "not checked"}
MAX_SEGMENTS = 40
"""Timeline rows shown; the JSON has them all."""


def _cell(x: object) -> str:
    """A value for a table cell: Unsupported shows as n/a (its reason is under "Not checked")."""
    if isinstance(x, Unsupported):
        return "n/a"
    if x is None:
        return "none"
    if isinstance(x, bool):
        return "yes" if x else "no"
    return clean(str(x)).replace("|", "\\|")


def _job(x: object) -> str:
    """A string the job chose (a name, a path, a frame): no Markdown of its own (links, headings,
    emphasis, tags) survives, gpuwatch/untrusted.py."""
    return _cell(x) if isinstance(x, (Unsupported, bool)) or x is None else markdown(str(x), inline=True)


HEADLINE_LIMIT = 8000
"""Characters of the verdict paragraph kept (it runs to ~1,000 with every clause)."""


def _title(stage: str) -> str:
    return STAGE_TITLES.get(stage, stage)


def render_markdown(r: Report) -> str:
    out: list[str] = []
    s = r.source
    who = f"PID {s.pid}" if s.pid is not None else "unknown job"
    out.append(f"# gpuwatch diagnosis: {who}")
    out.append("")
    if s.cmdline:
        out.append(markdown_code(s.cmdline))
        out.append("")
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.started_wall)) if s.started_wall else "n/a"
    what = f"replay of {markdown_code(s.path or '')}" if s.kind == "replay" else "live watch"
    # How the watch ended can quote the job (its exit reason in a recording, an error's text), and the
    # scope names its ranks: escaped as the job's other strings are.
    out.append(f"{what}, started {started}, {s.covered_s:.0f} s over {count(s.frames, 'tick')}; {markdown(s.ended, inline=True)}.")
    if s.scope:
        out.append(f"{markdown(s.scope)}.")
    if s.early:
        asked = f" of the {s.requested_s:.0f} s asked for" if s.requested_s else ""
        if s.kind == "replay":  # the line above says why
            out.append(f"**The recording ends early**: this report covers only the {s.covered_s:.0f} s{asked} it holds.")
        else:
            out.append(f"**Watching ended early** ({markdown(_early_why(s.ended), inline=True)}): this report covers only the "
                       f"{s.covered_s:.0f} s{asked} that were seen.")
    if s.bad_lines:
        out.append(f"{count(s.bad_lines, 'unreadable line')} of the recording "
                   f"{'was' if s.bad_lines == 1 else 'were'} skipped.")
    out += ["", "## Verdict", ""]
    m = r.summary
    if m.snapshot:
        out += [too_short(r.source), ""]
    title, rest = headline(m)
    # The sentence quotes the job's own strings (a frame, a file): no Markdown of theirs survives.
    out.append(f"**{title}** {markdown(rest, HEADLINE_LIMIT, inline=True)}")
    out += _checks(r) + _remedies(r) + _timeline(r) + _evidence(r) + _stall(r) + _epochs(r) + _stacks(r)
    out += _environment(r) + _gaps(r)
    return "\n".join(out).rstrip() + "\n"


def _early_why(ended: str) -> str:
    """Why a live watch ended early, for the brackets after "**Watching ended early**": the words
    "stopped early" are not said twice ("stopped early (interrupted)" reads "interrupted")."""
    if ended.startswith(STOPPED_EARLY) and ended.endswith(")"):
        return ended[len(STOPPED_EARLY):-1]
    return ended



def _checks(r: Report) -> list[str]:
    out = ["", "## Checks", "", "| status | check | why |", "|---|---|---|"]
    # A check left unchecked for a reason "Not checked, and why" gives (with its fix, naming the
    # check) points there: a host with no NVIDIA driver read the driver's install advice in four rows
    # here and again below (trial 28).
    gaps = {g.reason for g in r.not_checked}
    for status in STATUSES:
        for c in r.checks:
            if c.status == status:
                # A reason quotes the job's strings (a mount point, a data path, an unsupported reading's
                # reason from a recording): escaped, or a crafted one would be Markdown or HTML.
                why = NOT_CHECKED_BELOW if c.status == NOT_CHECKED and c.reason in gaps else _job(c.reason)
                out.append(f"| {STATUS_WORD[status]} | {_cell(c.title)} | {why} |")
    return out


NOT_CHECKED_BELOW = "see *Not checked, and why* below"


def _remedies(r: Report) -> list[str]:
    """One numbered item per stage (best first) with its remedies below, then the check fixes."""
    snapshot = r.summary.snapshot
    out = ["", "## Remedies" if snapshot else "## Remedies, what cost the job most first", ""]
    if not r.remedies:
        return out + [no_remedy_words(r)]
    if any(rem.stage is not None for rem in r.remedies):
        out += [REMEDIES_READ_AT, ""]
    n, stage = 0, None
    for rem in r.remedies:
        if rem.stage is not None and rem.stage != stage:
            n, stage = n + 1, rem.stage
            out.append(f"{n}. **{_title(rem.stage)}** ({stage_gain(rem, snapshot)})")
        # A remedy quotes the job's own strings (a frame, a function), and its own words hold "<...>"
        # placeholders: escaped as the verdict is, or a crafted name would be Markdown or HTML.
        if rem.stage is not None:
            out.append(f"   - {markdown(rem.text)}")  # it opens the item: a leading "#" or ">" would act
        else:
            n += 1
            out.append(f"{n}. **{markdown(rem.title or rem.check, inline=True)}** (a failed or warned check): {markdown(rem.text, inline=True)}")
    return out


def _timeline(r: Report) -> list[str]:
    out = ["", "## Verdict timeline", ""]
    if not r.timeline:
        return out + ["No ticks."]
    out += ["| from (s) | to (s) | stage | ticks | confidence (mean, min) |", "|---|---|---|---|---|"]
    for seg in r.timeline[:MAX_SEGMENTS]:
        out.append(f"| {seg.start_s:.0f} | {seg.end_s:.0f} | {_title(seg.stage)} | {seg.ticks} | "
                   f"{seg.confidence_mean:.2f}, {seg.confidence_min:.2f} |")
    if len(r.timeline) > MAX_SEGMENTS:
        out.append(f"\n{len(r.timeline) - MAX_SEGMENTS} more segments in the JSON report.")
    return out


def _evidence(r: Report) -> list[str]:
    out = ["", "## Evidence per stage", ""]
    if not r.evidence:
        return out + ["The verdicts carried no evidence."]
    out += ["Marks: " + ", ".join(f"{m} {word}" for word, m in EVIDENCE_MARKS.items()) + f" ({FACT_MARKS}).", ""]
    stage = None
    for e in r.evidence:
        if e.stage != stage:
            if stage is not None:
                out.append("")
            stage = e.stage
            out += [f"**{_title(stage)}**", ""]
        # A fact without a cut counts the ticks it pointed to the stage (its mark's meaning), not the
        # ticks it was seen: "pin_memory is on" holds all along and may point away from PCIe.
        held = "met" if e.threshold is not None else f"pointed to {_title(stage)}"
        mid = ("" if e.value_median is None else " (the latest reading is shown)" if e.latest
               else " (the middle reading is shown)")
        ticks = (f"ticks {_title(stage)} held" if not e.of or e.seen >= e.of else
                 f"{count(e.seen, 'tick')} it was read in, of the {e.of} {_title(stage)} held")
        out.append(f"- {EVIDENCE_MARKS.get(e.status, '')} {_job(e.text)}: {held} in {e.supports_share:.0%} of the "
                   f"{ticks}{mid}")
    return out


def _stall(r: Report) -> list[str]:
    out = ["", "## Periodic stalls", ""]
    st = r.stall
    if st is None and r.figures is not None and r.figures.stall_measured is None:
        # stalls are found in the GPU's utilization samples: with none read, none could be seen
        return out + ["Not looked for: no tick read the GPU's utilization, which periodic stalls are found in."]
    if st is None:
        return out + ["The verdicts reported no periodic GPU stall."]
    with_ = f", coinciding with {_job(st.coincides_with)}" if st.coincides_with else ""  # a stack label: the job's
    # the middle of the ticks' figures: the verdict's sentence quotes its own tick's, which may differ
    # ("~2.2 s every ~5.2 s" above "about 2.0 s every 5.0 s" read as two measurements; review 48)
    return out + [f"The GPU idled about {st.idle_s:.1f} s every {st.period_s:.1f} s{with_} "
                  f"(seen in {st.seen_share:.0%} of the ticks; the middle of their figures)."]


def _epochs(r: Report) -> list[str]:
    out = ["", "## Epoch structure", ""]
    # Escaped as every other paragraph is: two "~" in one paragraph strike the text between them
    # through in GitHub's Markdown, and this section alone had printed them bare (review 30)
    if not r.epochs:
        return out + [markdown(epochs_none(r), HEADLINE_LIMIT)]
    return out + [markdown(epochs_at_end(r), HEADLINE_LIMIT)]


STARTING_WORDS = "waiting while the DataLoader starts or stops its workers"


def _stacks(r: Report) -> list[str]:
    out = ["", "## Hottest stacks per thread role", ""]
    if not r.stacks:
        return out + ["No stack samples (see Checks and Not checked)."]
    for h in r.stacks:
        leaf = " <- ".join(h.frames) or "(no frames)"  # leaf first, as deep as samples were told apart
        # A wait inside the DataLoader's worker start-up or shutdown says so, as the evidence does (its
        # label is the data wait's: "waiting for a batch" beside a stack in _shutdown_workers).
        doing = (STARTING_WORDS if STARTING in (h.detail or "")
                 else LABEL_WORDS.get(h.label, _job(h.label)))
        out.append(f"- **{ROLE_WORDS.get(h.role, _job(h.role))}** {h.share:.0%} ({count(h.count, 'sample')}), "
                   f"{doing}: {markdown_code(leaf)}")
    return out


def _environment(r: Report) -> list[str]:
    out = ["", "## Environment", ""]
    env = r.environment
    if isinstance(env, Unsupported):
        return out + [f"Not probed: {markdown(env.reason, inline=True)}"]  # reasons may quote an error's or the job's text
    assert isinstance(env, Environment)
    nodes = env.cpus.numa_nodes
    node_txt = ", ".join(f"node {n}: CPUs {cpulist(c)}" for n, c in nodes) if isinstance(nodes, tuple) else "n/a"
    out.append(f"- Host {markdown_code(str(env.hostname))}, kernel {_cell(env.kernel)}, {env.cpus.logical_cpus} logical CPUs ({node_txt})")
    d = env.driver
    if isinstance(d, Unsupported):
        out.append(f"- NVIDIA driver: n/a ({markdown(d.reason, inline=True)})")
    else:
        out.append(f"- NVIDIA driver {_cell(d.driver_version)}, NVML {_cell(d.nvml_version)}, CUDA {_cell(d.cuda_version)}")
    t = env.target
    if not isinstance(t, Unsupported):
        aff = cpulist(t.affinity) if isinstance(t.affinity, tuple) else "n/a"
        out.append(f"- Job: {count(t.mains, 'training process', 'training processes')}, "
                   f"{count(t.workers, 'DataLoader worker')} at start; "
                   f"CPUs {aff} (NUMA node {', '.join(map(str, t.numa_nodes)) or 'n/a'})")
    p = env.ptrace
    if not isinstance(p, Unsupported):
        out.append(f"- ptrace: {'allowed' if p.allowed else 'denied'} ({markdown(p.reason, inline=True)}; Yama scope {_cell(p.yama_scope)}, "
                   f"CAP_SYS_PTRACE {_cell(p.cap_sys_ptrace)})")
    cg = env.cgroup
    if not isinstance(cg, Unsupported):
        cpu = "no limit" if cg.cpu_limit_cores is None else f"{_cell(cg.cpu_limit_cores)} cores"
        mem = "no limit" if cg.memory_limit_bytes is None else (
            f"{cg.memory_limit_bytes / 2**30:.1f} GiB" if isinstance(cg.memory_limit_bytes, int) else "n/a")
        out.append(f"- cgroup v{cg.version} {markdown_code(str(cg.path))}: CPU {cpu}, memory {mem}")
    out += _gpu_table(r, env) + _storage_table(env)
    return out


def _gpu_table(r: Report, env: Environment) -> list[str]:
    if isinstance(env.gpus, Unsupported):
        return [f"- GPUs: n/a ({markdown(env.gpus.reason, inline=True)})"]
    links = {x.index: x for x in r.links}
    out = ["", "| GPU | model | bus | PCIe max | PCIe under load | persistence | MIG | ECC uncorrected (boot / life) | NUMA | job's |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for g in env.gpus:
        ln = links.get(g.index)
        load = f"Gen{ln.gen} x{ln.width} ({ln.loaded_ticks} ticks)" if ln else "never loaded"
        numa = f"{g.numa_node} ({g.numa_source})" if not isinstance(g.numa_node, Unsupported) else "n/a"
        out.append(f"| {g.index} | {_cell(g.name)} | {_cell(g.pci_bus_id)} | Gen{_cell(g.pcie_gen_max)} x{_cell(g.pcie_width_max)} "
                   f"| {load} | {_cell(g.persistence_mode)} | {_cell(g.mig_enabled)} | "
                   f"{_cell(g.ecc_uncorrected_volatile)} / {_cell(g.ecc_uncorrected_aggregate)} | {numa} | {_cell(g.used_by_target)} |")
    return out


def _storage_table(env: Environment) -> list[str]:
    if isinstance(env.storage, Unsupported):
        return [f"- Storage: n/a ({markdown(env.storage.reason, inline=True)})"]
    out = ["", "| data | path | file system | mount | source | network | rotational | open files |",
           "|---|---|---|---|---|---|---|---|"]
    for s in env.storage:
        out.append(f"| {s.kind} | {_job(s.path)} | {_job(s.fstype)} | {_job(s.mountpoint)} | {_job(s.source)} | "
                   f"{_cell(s.network)} | {_cell(s.rotational)} | {s.open_files} |")
    return out


def _gaps(r: Report) -> list[str]:
    """Grouped by reason: one missing library often explains a whole list of readings and checks.
    Each line: what was not measured (plain words, with the ticks it was missing), then why."""
    out = ["", "## Not checked, and why", ""]
    readings: dict[str, list[str]] = {}
    checks: dict[str, list[str]] = {}
    for c in r.checks:
        if c.status == NOT_CHECKED:
            checks.setdefault(c.reason, []).append(f"*{_cell(c.title)}*")
            readings.setdefault(c.reason, [])
    for g in r.not_checked:
        times = f" ({count(g.count, 'tick')})" if not g.what.startswith("environment") else ""
        readings.setdefault(g.reason, []).append(f"{_cell(g.title or words(g.what))}{times}")
    if not readings:
        return out + ["Everything could be read."]
    for reason, items in readings.items():
        named = checks.get(reason, [])
        what = ", ".join(items)
        if named:
            what += ("; " if items else "") + ("the check " if len(named) == 1 else "the checks ") + ", ".join(named)
        # The reason may quote the job (a mount point) or a recording's own words: escaped as above.
        out.append(f"- {what[0].upper()}{what[1:]}. Why: {_job(reason)}")
    return out
