/**
 * The inline drain on a 3-server ZooKeeper ensemble (`--only ensemble`): the
 * bench starts the ensemble on loopback, fsync on like the standalone server,
 * warms it with an untimed drain, then runs the same drain as the standalone
 * one under the key `ensemble`. Its target is a share of the standalone
 * drain of the same run. The server CPU per job counts the three JVMs, and the
 * request counters add up the three servers (clients are spread over them).
 */
import { startEnsemble, type ZooKeeperEnsemble } from '@zkq/testing';
import { benchDrain, type RunContext, warmUpDrain } from './scenarios.js';
import { type System, zkqSystem } from './systems.js';

/** Members of the ensemble. */
const ENSEMBLE_SIZE = 3;

export interface BenchEnsemble {
  readonly connectionString: string;
  /** zkq on the ensemble, its queues under `prefix`. */
  system(prefix: string): System;
  stop(): Promise<void>;
}

/** Starts the ensemble the bench's runs share (once: a fresh JVM serves its first requests slowly). */
export async function startBenchEnsemble(): Promise<BenchEnsemble> {
  const ensemble: ZooKeeperEnsemble = await startEnsemble({
    size: ENSEMBLE_SIZE,
    fsync: true,
    startTimeoutMs: 120_000,
  });
  const pids = () => ensemble.servers.flatMap((s) => (s.pid === undefined ? [] : [s.pid]));
  return {
    connectionString: ensemble.connectionString,
    system: (prefix) => zkqSystem(ensemble.connectionString, pids(), prefix),
    stop: () => ensemble.stop(),
  };
}

/** The inline drain on the ensemble; `warm` first runs an untimed drain on it. */
export async function benchEnsembleDrain(ctx: RunContext, warm: boolean, trace: { trace?: boolean }): Promise<void> {
  if (warm) await warmUpDrain(ctx);
  await benchDrain(ctx, { key: 'ensemble', processes: 1, ...trace });
}
