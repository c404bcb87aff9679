# Nothing measured is ever lost (numa_effects.tables.history): before the first job of a run
# that measures, every record is kept in <results>/history/<code digest>/ (hard links), since
# Snakemake deletes a job's output before the job runs; a folder whose machine.json is another
# machine's, or that holds records or tables this version cannot read
# (numa_effects.tables.formats), is refused first. A dry run says in one line what a run would
# measure, why and how long it takes (numa_effects.plan.remeasure). Both read Snakemake's DAG:
# the jobs it runs and its reasons, handed to the library as plain data.
import logging

from snakemake_interface_logger_plugins.common import LogEvent

from numa_effects.plan import remeasure
from numa_effects.tables import formats
from numa_effects.tables import history as history_mod


def measuring_jobs(dag):
    """The jobs of this run that measure: rule, record, and Snakemake's reason."""
    out = []
    for job in dag.needrun_jobs():
        if job.rule.name in remeasure.RULES:
            why = dag.reason(job)
            out.append(
                {
                    "rule": job.rule.name,
                    "output": str(job.output[0]),
                    "forced": bool(why.forced),
                    "incomplete": bool(why.incomplete_output),
                    "params_changed": bool(why.params_changed),
                }
            )
    return out


def checkpoint_runs(dag):
    """The two-stage checkpoint runs: it asks for replicates the DAG does not hold yet."""
    return any(job.rule.name == remeasure.CHECKPOINT for job in dag.needrun_jobs())


def older_folder(dag, jobs, dry_run=False):
    """The line refusing a results folder of another version (records it cannot read, a
    cells.csv without a column it needs), or None; ``jobs``: ``measuring_jobs``."""
    rebuilt = any(job.rule.name == "tables" for job in dag.needrun_jobs())
    outputs = [j["output"] for j in jobs]
    return formats.problem(PLAN.results, outputs, rebuilt, dry_run)


def keep_history():
    """onstart (Snakefile): the run's line, the refusal of another machine's folder, the
    records kept; never under --touch, an import or a comparison."""
    if not (workflow.is_main_process and PLAN.measured) or workflow.touch:
        return
    dag = workflow.dag
    jobs = measuring_jobs(dag)
    older = older_folder(dag, jobs)
    if older:
        print(older, file=sys.stderr)
        raise SystemExit(1)
    try:
        lines = history_mod.start(PLAN, jobs, checkpoint_runs(dag))
    except history_mod.Refused as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(1)
    for line in lines:
        print(line, file=sys.stderr)


class DryRunLine(logging.Handler):
    """Prints the dry run's line once, when Snakemake reports the jobs it would run."""

    done = False

    def emit(self, record):
        if self.done or getattr(record, "event", None) != LogEvent.RUN_INFO:
            return
        if not workflow.dryrun:
            return
        self.done = True
        dag = workflow.dag
        try:
            jobs = measuring_jobs(dag)
            older = older_folder(dag, jobs, dry_run=True)
            lines = [older] if older else []
            lines += history_mod.dry_run_lines(PLAN, jobs, checkpoint_runs(dag))
        except Exception as exc:  # the dry run goes on without the line, saying why
            lines = [f"numa-effects: no count of the jobs: {type(exc).__name__}: {exc}"]
        for line in lines:
            print(line, file=sys.stderr)


if workflow.is_main_process and PLAN.measured:
    logging.getLogger("snakemake").addHandler(DryRunLine())
