// Stormscale's own minimal IDL of Storm 2.8's Nimbus service: only the calls and fields the operator
// and the exporter use. Field ids and wire types match Storm 2.8 (checked against the generated
// classes in storm-client's jar); fields a struct leaves out are skipped by the decoder, so this file
// stays wire compatible while being small. Transport: framed, binary protocol, no SASL.
//
// GlobalStreamId is a map key (BoltStats, ComponentCommon.inputs); the client gives the loaded class a
// value hash so those maps decode in Python.

exception NotAliveException { 1: required string msg; }
exception AuthorizationException { 1: required string msg; }
exception InvalidTopologyException { 1: required string msg; }

struct SupervisorSummary {
  1: required string host;
  2: required i32 uptime_secs;
  3: required i32 num_workers;
  4: required i32 num_used_workers;
  5: required string supervisor_id;
}

struct NimbusSummary {
  1: required string host;
  2: required i32 port;
  3: required i32 uptime_secs;
  4: required bool isLeader;
  5: required string version;
}

struct TopologySummary {
  1: required string id;
  2: required string name;
  3: required i32 num_tasks;
  4: required i32 num_executors;
  5: required i32 num_workers;
  6: required i32 uptime_secs;
  7: required string status;
}

struct ClusterSummary {
  1: required list<SupervisorSummary> supervisors;
  3: required list<TopologySummary> topologies;
  4: required list<NimbusSummary> nimbuses;
}

struct GlobalStreamId {
  1: required string componentId;
  2: required string streamId;
}

// Executor stats: outer map key = window (":all-time", "600", ...), inner key = stream.
struct BoltStats {
  1: required map<string, map<GlobalStreamId, i64>> acked;
  2: required map<string, map<GlobalStreamId, i64>> failed;
  3: required map<string, map<GlobalStreamId, double>> process_ms_avg;
  4: required map<string, map<GlobalStreamId, i64>> executed;
  5: required map<string, map<GlobalStreamId, double>> execute_ms_avg;
}

struct SpoutStats {
  1: required map<string, map<string, i64>> acked;
  2: required map<string, map<string, i64>> failed;
  3: required map<string, map<string, double>> complete_ms_avg;
}

union ExecutorSpecificStats {
  1: BoltStats bolt;
  2: SpoutStats spout;
}

struct ExecutorStats {
  1: required map<string, map<string, i64>> emitted;
  2: required map<string, map<string, i64>> transferred;
  3: required ExecutorSpecificStats specific;
  4: required double rate;
}

struct ExecutorInfo {
  1: required i32 task_start;
  2: required i32 task_end;
}

struct ExecutorSummary {
  1: required ExecutorInfo executor_info;
  2: required string component_id;
  3: required string host;
  4: required i32 port;
  5: required i32 uptime_secs;
  7: optional ExecutorStats stats;
}

struct TopologyInfo {
  1: required string id;
  2: required string name;
  3: required i32 uptime_secs;
  4: required list<ExecutorSummary> executors;
  5: required string status;
  513: optional string sched_status;  // the scheduler's word on the topology (e.g. why it waits)
}

enum NumErrorsChoice { ALL, NONE, ONE }

struct GetInfoOptions {
  1: optional NumErrorsChoice num_err_choice;
}

// The UI's topology page: per-component aggregates over one window.
struct CommonAggregateStats {
  1: optional i32 num_executors;
  2: optional i32 num_tasks;
  3: optional i64 emitted;
  4: optional i64 transferred;
  5: optional i64 acked;
  6: optional i64 failed;
}

struct BoltAggregateStats {
  1: optional double execute_latency_ms;
  2: optional double process_latency_ms;
  3: optional i64 executed;
  4: optional double capacity;
}

struct SpoutAggregateStats {
  1: optional double complete_latency_ms;
}

union SpecificAggregateStats {
  1: BoltAggregateStats bolt;
  2: SpoutAggregateStats spout;
}

struct ComponentAggregateStats {
  1: optional i32 type;  // ComponentType: BOLT = 1, SPOUT = 2
  2: optional CommonAggregateStats common_stats;
  3: optional SpecificAggregateStats specific_stats;
}

struct TopologyPageInfo {
  1: required string id;
  2: optional string name;
  3: optional i32 uptime_secs;
  4: optional string status;
  5: optional i32 num_tasks;
  6: optional i32 num_workers;
  7: optional i32 num_executors;
  9: optional map<string, ComponentAggregateStats> id_to_spout_agg_stats;
  10: optional map<string, ComponentAggregateStats> id_to_bolt_agg_stats;
}

// The topology's structure (getUserTopology); component objects are left out.
struct NullStruct {}

// A custom grouping as Storm's Java builder submits it: a class and its constructor's arguments.
union JavaObjectArg {
  1: i32 int_arg;
  2: i64 long_arg;
  3: string string_arg;
  4: bool bool_arg;
  5: binary binary_arg;
  6: double double_arg;
}

struct JavaObject {
  1: required string full_class_name;
  2: required list<JavaObjectArg> args_list;
}

// fields: an empty list is the global grouping; custom_serialized: a Java-serialized
// CustomStreamGrouping (the partial key grouping among them).
union Grouping {
  1: list<string> fields;
  2: NullStruct shuffle;
  3: NullStruct all;
  4: NullStruct none;
  5: NullStruct direct;
  6: JavaObject custom_object;
  7: binary custom_serialized;
  8: NullStruct local_or_shuffle;
}

struct StreamInfo {
  1: required list<string> output_fields;
  2: required bool direct;
}

struct ComponentCommon {
  1: required map<GlobalStreamId, Grouping> inputs;
  2: required map<string, StreamInfo> streams;
  3: optional i32 parallelism_hint;
}

struct SpoutSpec {
  2: required ComponentCommon common;
}

struct Bolt {
  2: required ComponentCommon common;
}

struct StormTopology {
  1: required map<string, SpoutSpec> spouts;
  2: required map<string, Bolt> bolts;
}

struct RebalanceOptions {
  1: optional i32 wait_secs;
  2: optional i32 num_workers;
  3: optional map<string, i32> num_executors;
  // A JSON object merged into the topology conf before it is scheduled again (Storm 2): the
  // operator's placement travels here (key "stormscale.placement", docs/scheduler.md).
  5: optional string topology_conf_overrides;
}

struct KillOptions {
  1: optional i32 wait_secs;
}

service Nimbus {
  ClusterSummary getClusterInfo() throws (1: AuthorizationException aze);
  list<TopologySummary> getTopologySummaries() throws (1: AuthorizationException aze);
  TopologyInfo getTopologyInfoByNameWithOpts(1: string name, 2: GetInfoOptions options)
    throws (1: NotAliveException e, 2: AuthorizationException aze);
  TopologyPageInfo getTopologyPageInfo(1: string id, 2: string window, 3: bool is_include_sys)
    throws (1: NotAliveException e, 2: AuthorizationException aze);
  StormTopology getUserTopology(1: string id) throws (1: NotAliveException e, 2: AuthorizationException aze);
  // The topology's conf as submitted (and merged by rebalances), a JSON object.
  string getTopologyConf(1: string id) throws (1: NotAliveException e, 2: AuthorizationException aze);
  void rebalance(1: string name, 2: RebalanceOptions options)
    throws (1: NotAliveException e, 2: InvalidTopologyException ite, 3: AuthorizationException aze);
  void killTopologyWithOpts(1: string name, 2: KillOptions options)
    throws (1: NotAliveException e, 2: AuthorizationException aze);
  void activate(1: string name) throws (1: NotAliveException e, 2: AuthorizationException aze);
  void deactivate(1: string name) throws (1: NotAliveException e, 2: AuthorizationException aze);
}
