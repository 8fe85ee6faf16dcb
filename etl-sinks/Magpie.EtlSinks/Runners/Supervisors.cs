// The two kinds of runner this module supervises, by the names the endpoints and the wiring use.
global using EtlTaskSupervisor = Magpie.EtlSinks.Runners.RunnerSupervisor<Magpie.EtlSinks.Configuration.EtlTaskDefinition, Magpie.EtlSinks.Tasks.EtlTaskStatsSnapshot>;
global using QueueSinkSupervisor = Magpie.EtlSinks.Runners.RunnerSupervisor<Magpie.EtlSinks.Configuration.QueueSinkDefinition, Magpie.EtlSinks.QueueSinks.QueueSinkStatsSnapshot>;
