# Stormscale: one entry point for people and for CI. Everything built or downloaded goes to .cache/ or .venv/.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv demo plan-demo test lint unit fuzz bench bench-planner bench-sizing bench-fleet bench-reaction bench-disruption bench-lookahead bench-faults bench-units bench-target accuracy mutation clean image lock

venv: $(STAMP)

# Every download is hash-checked: pip itself from the lock (its entry, hashes included), then the whole lock
# (pinned tools, the packages' runtime dependencies, the pinned build backend), then the three local
# packages, editable, with no dependency resolution and no isolated build (the backend comes from the
# lock), so nothing unhashed is fetched.
$(STAMP): requirements-dev.lock requirements-dev.txt planner/pyproject.toml operator/pyproject.toml spark/pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes -r <(awk '/^pip==/ {p = 1} p {print} p && !/\\$$/ {exit}' requirements-dev.lock)
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements-dev.lock
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e planner -e spark -e operator
	@touch $@

# lock: regenerate the hash-locked requirements (uv pip compile --generate-hashes, for CPython 3.11 on Linux
# x86_64) from the declared pins: requirements-dev.lock (make venv: requirements-dev.txt and the three
# packages with every extra), operator/requirements.lock (the operator image: planner, aggregation without
# Spark, operator), spark/requirements.lock (the publisher image: planner, aggregation[spark,publish]) and
# requirements-mutation.lock (make mutation: cosmic-ray, constrained to the versions make venv installs).
# Each also pins the build backend of requirements-build.txt. Versions already in a lock are kept
# (UPGRADE=1 takes the newest that fit). tests/unit/test_locks.py fails when a lock disagrees with a pin.
UV_VERSION := 0.13.8
UV := .cache/tools/uv-$(UV_VERSION)/bin/uv
LOCAL_PACKAGES := stormscale-planner stormscale-aggregation stormscale-operator
COMPILE = $(UV) pip compile --quiet --generate-hashes --python-version 3.11 \
	--python-platform x86_64-unknown-linux-gnu --custom-compile-command 'make lock' \
	$(foreach p,$(LOCAL_PACKAGES),--no-emit-package $(p)) $(if $(UPGRADE),--upgrade)
.PHONY: lock
lock: $(UV)
	printf '%s\n' -r requirements-dev.txt -r requirements-build.txt './planner[plot]' './spark[spark,publish]' ./operator \
	  | $(COMPILE) - -o requirements-dev.lock
	printf '%s\n' -r requirements-build.txt ./planner ./spark ./operator | $(COMPILE) - -o operator/requirements.lock
	printf '%s\n' -r requirements-build.txt ./planner './spark[spark,publish]' | $(COMPILE) - -o spark/requirements.lock
	printf '%s\n' -r requirements-mutation.txt | $(COMPILE) - -c requirements-dev.lock -o requirements-mutation.lock

$(UV):
	$(PYTHON) -m venv $(dir $(UV))..
	$(dir $(UV))pip install --quiet uv==$(UV_VERSION)

## demo: set everything up (test bed built on first use), run the operator on a congested topology, raise its budget 0 -> 3, print before/after
demo: venv prometheus
	$(BIN)/python -m tests.harness.demo --budget 3

## plan-demo: the planner alone, in a second: plan the thesis's topology 17 with 3 extra units (every strategy side by side)
plan-demo: venv
	$(BIN)/stormscale plan examples/profiles/thesis-topology-17.json --budget 3

## lint: ruff, mypy (strict) and the import-linter contracts
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

## test: set everything up, lint, and run every test (the fixtures build the test bed when missing): the
## unit tests on both cores (pytest-xdist), then the real-stack tests one at a time; fails if either fails.
## The real-stack tests run the operator from its image (the operator's image built first, cached by digest);
## the demo and the benchmarks run it from the virtual environment (STORMSCALE_BED_OPERATOR=image for the image)
test: lint prometheus
	IMAGES=operator $(MAKE) --no-print-directory image
	$(BIN)/python -m pytest -n 2 tests/unit; unit=$$?; \
	STORMSCALE_BED_OPERATOR=image $(BIN)/python -m pytest tests/e2e tests/integration -m "not sizing_bed and not publisher_image and not multilang_bed"; stack=$$?; \
	exit $$(( unit != 0 ? unit : stack ))

## e2e-sizing: Auto sizing for a target rate, SAM on pods of two slots and MultiLevel's one more unit, asserted on real Storm with the operator from its image (about 8 minutes with the bed's start; kept out of make test for CI's time budget)
.PHONY: e2e-sizing
e2e-sizing: venv prometheus
	IMAGES=operator $(MAKE) --no-print-directory image
	STORMSCALE_BED_OPERATOR=image $(BIN)/python -m pytest tests/e2e -m sizing_bed

## bed-multilang: the benchmark topologies with Python (multilang) components on real Storm: every sink fed, topology 10 in
## the thesis's proportions, a stopped Supervisor's worker and its Python children ended (about 2 minutes; the unusual case
## kept out of make test for CI's time budget; the JVM bolts and the Kafka source, the common case, run there)
.PHONY: bed-multilang
bed-multilang: venv prometheus
	$(BIN)/python -m pytest tests/integration/test_storm_topologies.py -m multilang_bed

## image-check: build both images, then run the publisher's from its root filesystem as the CronJob does (its user, a
## read-only root, Spark in local mode) against the real API server; the operator's image runs in make test already
.PHONY: image-check
image-check: venv
	IMAGES="operator publisher" $(MAKE) --no-print-directory image
	$(BIN)/python -m pytest tests/integration/test_packaging.py -m publisher_image

## unit: only the fast tests (no Spark JVM, no test bed)
unit: venv
	$(BIN)/python -m pytest tests/unit -m "not spark"

## fuzz: the hostile-input fuzz tests (profiles, specs, Nimbus and Prometheus answers) with 20,000 random examples each (the unit run has 400, fixed)
fuzz: venv
	STORMSCALE_FUZZ_EXAMPLES=$${STORMSCALE_FUZZ_EXAMPLES:-20000} $(BIN)/python -m pytest tests/unit/test_fuzz_inputs.py tests/unit/operator/test_fuzz_responses.py -q

## bench: the benchmarks (tables on stdout, plots under bench/out/)
bench: venv
	$(BIN)/python -m bench.planner
	$(BIN)/python -m bench.sizing

## bench-planner: each strategy's share of the exact optimum's gain under both flow models: 200 seeded random DAGs of 10-25 components at budgets 1..8 (mean, p10, min, units spent) and the thesis's topology 17 at budgets 2, 3, 4, 6, 8 (about a minute; DAGS=N for more or fewer)
DAGS ?= 200
bench-planner: venv
	$(BIN)/python -m bench.planner_shares --dags $(DAGS)

## bench-sizing: sizing and placement timings, and every heuristic's units and pods against the exact minimum
bench-sizing: venv
	$(BIN)/python -m bench.sizing

## bench-fleet: one operator, 200 StormTopology objects on a real API server (fake Nimbus and Prometheus), then 10 of their endpoints hanging: pass latency, time to Ready, peak RSS (about 12 minutes; the hanging phase again per size in THREADS, default 6: Kopf's own pool on 2 cores, against the operator's 16): table on stdout, plot in bench/out/fleet.png
THREADS ?= 6
bench-fleet: venv
	$(BIN)/python -m bench.fleet $(if $(THREADS),--threads $(THREADS))

## bench-hostile: one hostile tenant among 50 healthy topologies on one operator (a real API server, fake Nimbus and Prometheus): per behaviour (16 MB of empty Thrift structs, a 500 MB body, 100,000 series, a 1 byte/s drip, Retry-After 15 and 10^30, a result 100,000 deep, a published profile of "[" x 500,000) the operator's RSS, the healthy passes' p50/p99 against a baseline, and the time until the hostile resource's condition names the reason; PASS/FAIL per target, exits non-zero on FAIL (each behaviour with its own operator process; about 15 minutes; STEADY=seconds per behaviour, BEHAVIOURS=a,b for some): table on stdout, records in bench/out/hostile.json
.PHONY: bench-hostile
STEADY ?= 45
bench-hostile: venv
	$(BIN)/python -m bench.hostile --steady $(STEADY) $(if $(BEHAVIOURS),--behaviours $(BEHAVIOURS))

## bench-reaction: kubectl apply of a new budget -> the Deployment scaled, the rebalance at Nimbus, the budget verified, on a real API server (fake Nimbus and Prometheus), against a one-handler Kopf operator in the same run (20 applies each, APPLIES=N; about 10 minutes): tables on stdout, plot in bench/out/reaction.png. DIP=1: one rebalance's throughput dip on the test bed instead (Kafka-fed JVM topology, budget 0 -> 1; about 15 minutes): bench/out/reaction-dip.png
APPLIES ?= 20
bench-reaction: venv $(if $(DIP),prometheus)
	$(BIN)/python -m bench.reaction $(if $(DIP),--dip,--applies $(APPLIES))

## bench-disruption: one scaling step (budget 0 -> 1) on the test bed, Storm's default rebalance against Stormscale's (MultiLevel placement delivered to the scheduler's endpoint), on the Kafka-fed linear and the diamond JVM topologies in the same run: workers restarted, seconds with the sink at zero, tuples lost, apply -> new steady rate (about 30 minutes; SHAPES=linear for one): table on stdout, plot in bench/out/disruption.png
SHAPES ?= linear,diamond
bench-disruption: venv prometheus
	$(BIN)/python -m bench.disruption --shapes $(SHAPES)

## bench-lookahead: Auto on the moving Kafka load (5 -> 16 -> 5 tuples/s) with scaling.lookAhead (the load's schedule, lead 2m) against reactive Auto in the same run: scale-out from the rise, peak lag, seconds with a backlog, unit-seconds (about 40 minutes): table on stdout
bench-lookahead: venv prometheus
	$(BIN)/python -m bench.lookahead

## bench-faults: 20 applies per fault (RUNS=N), each with the fault injected, on a real API server with the operator as a kopf process (fake Nimbus; fake Prometheus, the real one for the metrics faults): operator SIGKILLed (at a random moment, and 0-30 ms after its intent is saved), API server restarted, Nimbus restarted losing the rebalance, Nimbus losing every rebalance, Prometheus stopped, metrics stale; does it converge, add nothing twice, post one event per budget, hold off while metrics are missing (about 95 minutes for all; FAULTS=operator-kill,apiserver-restart,... for some); FAULTS=real: on the whole test bed (real Storm, ZooKeeper, Kafka, the Kafka-fed JVM topology), 10 applies each (RUNS=N) with the real Nimbus SIGKILLed and restarted, a worker pod's Supervisor killed (the pod restarted), a worker JVM killed, ZooKeeper restarted, the Kafka broker restarted (its data kept): converged, applied once as planned, no record lost (minutes a run; storm-nimbus-restart,... for some): the fault tables on stdout
RUNS ?=
FAULTS ?= all
bench-faults: venv prometheus
	$(BIN)/python -m bench.faults $(if $(RUNS),--runs $(RUNS)) --faults $(FAULTS)

## bench-units: units are real: a saturated CPU-bound bolt on one worker pod at 500m, 1000m and 500m again, through Storm (about 5 minutes; an assertion-bearing measurement, moved out of make test to keep CI within its budget)
bench-units: venv prometheus
	$(BIN)/python -m pytest -p tests.conftest bench/test_bolt_units.py -s

## bench-target: raise spec.scaling.targetRate on the test bed (Kafka-fed JVM linear topology, Auto mode, a fixed load): the operator sizes, packs and applies; target, sized units, the planner's optimum and pod bound, pods used (placement, Deployment, Nimbus), measured rate, for Exact and MBA on SAM with pods of 2 slots against Storm's one-slot placement (about 30 minutes; QUICK=1: one run, about 8; TARGET=N tuples/s): table on stdout, records in bench/out/target.json
bench-target: venv prometheus
	$(BIN)/python -m bench.target $(if $(QUICK),--quick) $(if $(TARGET),--target $(TARGET))

## accuracy: the operator's predicted throughput against the measured one, budget 0 -> 3 on each scenario, and one bottleneck's throughput against its units (the test bed; about 100 minutes): tables on stdout, plot in bench/out/accuracy.png
accuracy: venv prometheus
	$(BIN)/python -m bench.accuracy

## mutation: mutation testing (cosmic-ray, pinned in requirements-mutation.txt, installed from its hashed lock) of the planner's core and the operator's pass (reconcile, decision, realizer), autoscale and policy, in a copy of the tree under .run/mutation; prints the score per module (tests/mutation/score.py; hours; not part of make test; MUTATE=tests/mutation/{planner,reconcile,autoscale,policy}.toml for one part)
mutation: venv
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements-mutation.lock
	bash tests/mutation/run.sh

clean:
	rm -rf $(VENV) .cache .run bench/out

# The Kubernetes part of the test bed (tests/harness/kubernetes/, Go module in tests/harness/assets/kube/).
# Standard library only: no venv needed.
.PHONY: kube-bins cluster-up cluster-down

## kube-bins: build etcd, kube-apiserver, kube-controller-manager and kubectl into .cache/bin (only when missing)
kube-bins:
	$(PYTHON) -m tests.harness.kubernetes.binaries

## cluster-up: start a local control plane in the background (state and logs under .run/); prints its kubeconfig
cluster-up:
	$(PYTHON) -m tests.harness.kubernetes.control_plane up

## cluster-down: stop the control plane that cluster-up started
cluster-down:
	$(PYTHON) -m tests.harness.kubernetes.control_plane down

.PHONY: try-kubelet
## try-kubelet: a real kubelet (built from Go modules) with containerd and runc from Debian's archive (unpacked under .cache/) beside the bed's control plane: a static pod and an API-bound pod run as containers, cAdvisor serves their CPU time and quota (about 3 minutes after make image; docs/testbed.md, "A real kubelet")
try-kubelet: venv
	IMAGES=operator $(MAKE) --no-print-directory image
	$(BIN)/python -m tests.harness.kubernetes.kubelet_try

# The Storm and Prometheus part of the test bed (tests/harness/storm/, tests/harness/prometheus/; poms in tests/harness/assets/storm/).
.PHONY: storm-home jvm-testbed scheduler-jar prometheus storm-up storm-down

## storm-home: assemble Storm 2.8 from Maven Central into .cache/storm-<version>/ (only when missing)
storm-home:
	$(PYTHON) -m tests.harness.storm.home

## jvm-testbed: build the JVM benchmark components' topology jar into .cache/jvm-testbed/ (only when its sources changed)
jvm-testbed:
	$(PYTHON) -m tests.harness.storm.jvm

## scheduler-jar: build Stormscale's Nimbus scheduler (scheduler/, JUnit tests included) into .cache/scheduler/ (only when its sources changed); the test bed's Nimbus runs it
scheduler-jar:
	$(PYTHON) -m tests.harness.storm.scheduler

## prometheus: install Prometheus from Debian's package if /usr/bin/prometheus is missing (root)
prometheus:
	bash tests/harness/assets/install_prometheus.sh

## image: build the operator's image (Dockerfile) and the publisher's (spark/Dockerfile) with buildah, no Docker
## engine, on a stand-in python:3.11-slim made from Debian packages (installs buildah and mmdebstrap, needs
## root; storage under .cache/images; rebuilt only when the Dockerfile or the files it copies change); docs/operator/images.md
image:
	IMAGES="$(IMAGES)" nice -n 19 bash operator/image/build_images.sh

## storm-up: start ZooKeeper, Nimbus and SUPERVISORS Supervisors in the background (state under .run/storm)
SUPERVISORS ?= 1
storm-up: venv storm-home
	$(BIN)/python -m tests.harness.storm.cluster up --supervisors $(SUPERVISORS)

## storm-down: stop what storm-up started
storm-down: venv
	$(BIN)/python -m tests.harness.storm.cluster down

# The aggregation job's benchmark (spark/, bench/aggregation.py): Spark local[2] against the single-process
# engine on 1M, 10M and 50M samples (about 15 min on 2 cores); SIZES="1e6 1e7" runs fewer.
.PHONY: bench-aggregation

## bench-aggregation: samples/s and peak memory per engine, table on stdout, plot in bench/out/aggregation.png
bench-aggregation: venv
	$(BIN)/python -m bench.aggregation $(if $(SIZES),--sizes $(SIZES))

# The fleet benchmark (bench/fleet_spark.py): 1,000 topologies at a 10 s step, 1 h, 6 h and 24 h of samples,
# Spark local[2] (grouped and DataFrame) against the single process (stopped past 16 GB of RSS);
# HOURS="1 6" runs fewer, ENGINES="spark-grouped local" skips the DataFrame job (~90 min at 24 h).
.PHONY: bench-fleet-spark
## bench-fleet-spark: the publisher's aggregation on a fleet's day, wall/CPU time and peak memory per engine and size (the grouped engine on local[2] and on a standalone cluster of a master and two workers started from PySpark's distribution, the DataFrame job, the single process: same data, same run), table on stdout, plot in bench/out/fleet-spark.png (the grouped engine's day about 7 minutes from the scheduled export's partitions, LAYOUT=partitioned, about 18 from hourly files; generating the 24 h input about 8 minutes the first time)
bench-fleet-spark: venv
	$(BIN)/python -m bench.fleet_spark $(if $(HOURS),--hours $(HOURS)) $(if $(ENGINES),--engines $(ENGINES)) $(if $(LAYOUT),--layout $(LAYOUT))

# helm for the chart tests (tests/harness/kubernetes/helm.py, Go module in tests/harness/assets/helm/). Standard library only.
.PHONY: helm-bin
## helm-bin: build helm from Go modules into .cache/bin (only when missing)
helm-bin:
	$(PYTHON) -m tests.harness.kubernetes.helm

# The Kafka part of the test bed (tests/harness/kafka/; pom in tests/harness/assets/kafka/).
.PHONY: kafka-home kafka-up kafka-down

## kafka-home: assemble Kafka 3.9 (broker, KRaft controller, StorageTool) from Maven Central into .cache/kafka-<version>/ (only when missing)
kafka-home:
	$(PYTHON) -m tests.harness.kafka.home

## kafka-up: format and start one KRaft broker + controller on 127.0.0.1 in the background (state under .run/kafka); prints its bootstrap address
kafka-up: venv kafka-home
	$(BIN)/python -m tests.harness.kafka.broker up

## kafka-down: stop what kafka-up started
kafka-down: venv
	$(BIN)/python -m tests.harness.kafka.broker down

# The whole test bed's daemons at once, in the background, for working by hand (tests and benchmarks start
# their own).
.PHONY: testbed-up testbed-down

## testbed-up: the control plane, ZooKeeper + Nimbus + SUPERVISORS Supervisors and a Kafka broker, in the background (state under .run/)
testbed-up: cluster-up storm-up kafka-up

## testbed-down: stop what testbed-up started
testbed-down: kafka-down storm-down cluster-down
