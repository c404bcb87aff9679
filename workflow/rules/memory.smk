# The measured memory matrix: per (CPU node, memory node) pair of the grid's node-pair
# cells one memory probe job (numa_effects.measure.workloads.memory_probe: a pointer chase's idle latency
# and one core's read bandwidth), pinned and verified like a cell on 1 core of the CPU node with
# memory bound to the memory node; memory_matrix.csv puts them beside the firmware distances of
# machine.json and each CPU node's local diagonal. No node-pair cells: no job, no table.


rule memory:
    output:
        PLAN.path(paths.MEMORY),
    log:
        PLAN.path(paths.MEMORY_LOG),
    wildcard_constraints:
        cpu=r"\d+",
        mem=r"\d+",
    conda:
        "../../envs/benchmark.yaml"
    threads: bench_threads
    resources:
        **bench_resources(PLAN.memory_timeout_s),
    params:
        spec=lambda wc: PLAN.memory_spec(int(wc.cpu), int(wc.mem)).to_json(),
        timeout_s=PLAN.memory_timeout_s,
    script:
        "../scripts/run_memory.py"


rule memory_matrix_table:
    input:
        memory=PLAN.memory_outputs(),
        machine=PLAN.path(paths.MACHINE),  # the firmware distances
        manifest=PLAN.manifest_path,  # a removed pair drops its row
    output:
        PLAN.table("memory_matrix"),
    log:
        PLAN.log("memory_matrix_table"),
    conda:
        "../../envs/analysis.yaml"
    params:
        code=PLAN.code["tables"],
    script:
        "../scripts/tabulate_memory.py"
