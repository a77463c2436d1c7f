// The few Nimbus calls and structs the test bed needs, written for this project. Field ids and types
// match Storm 2.8's wire format (checked against the generated classes in storm-client's jar); fields
// left out here are skipped by the decoder. Transport: framed, binary protocol, no SASL.

exception NotAliveException { 1: required string msg; }
exception AuthorizationException { 1: required string msg; }

struct SupervisorSummary {
  1: required string host;
  2: required i32 uptime_secs;
  3: required i32 num_workers;
  4: required i32 num_used_workers;
  5: required string supervisor_id;
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

struct NimbusSummary {
  1: required string host;
  2: required i32 port;
  3: required i32 uptime_secs;
  4: required bool isLeader;
  5: required string version;
}

struct ClusterSummary {
  1: required list<SupervisorSummary> supervisors;
  3: required list<TopologySummary> topologies;
  4: required list<NimbusSummary> nimbuses;
}

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

struct KillOptions {
  1: optional i32 wait_secs;
}

service Nimbus {
  ClusterSummary getClusterInfo() throws (1: AuthorizationException aze);
  TopologyPageInfo getTopologyPageInfo(1: string id, 2: string window, 3: bool is_include_sys)
    throws (1: NotAliveException e, 2: AuthorizationException aze);
  void killTopologyWithOpts(1: string name, 2: KillOptions options)
    throws (1: NotAliveException e, 2: AuthorizationException aze);
}
