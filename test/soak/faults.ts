/**
 * The soak's faults, one at a time, at random moments until a deadline:
 * SIGKILL a worker (a replacement starts), SIGSTOP one past its lease then
 * SIGCONT, freeze or cut one worker's connection (its own proxy) then
 * restore it, lose the replies to a worker or to the producer for a while
 * (requests applied, replies dropped, then the connection cut), expire one
 * worker's sessions, restart ZooKeeper. Every kind happens once first (in
 * random order) when the time allows; expiry and restart happen only once.
 * Stops and freezes spare the housekeeping leader; half the other worker
 * faults target it.
 * With `leaderRestarts`, two more kinds repeat among the others: the
 * housekeeping leader is killed shortly before a ZooKeeper restart
 * (kill-restart), or while ZooKeeper is down (restart-kill), its
 * replacement starting before, during or after the restart.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { expireSession, type TcpProxy, type ZooKeeperServer } from '@zkq/testing';
import type { FaultEvent, FaultKind } from './history.js';
import type { Rng } from './rng.js';
import type { WorkerProcess } from './workers.js';

/** A worker position: its proxy stays, its process is replaced after a kill. */
export interface Slot {
  proxy: TcpProxy;
  lockDuration: number;
  worker: WorkerProcess;
  /** Starts a replacement worker for this slot and waits until it runs. */
  respawn(): Promise<void>;
}

export interface FaultPlan {
  zk: ZooKeeperServer;
  slots: Slot[];
  /** The producer's own proxy. */
  producerProxy: TcpProxy;
  rng: Rng;
  /** No fault starts after this time (ms since epoch). */
  until: number;
  maxFaults: number;
  /** Also kill the housekeeping leader around ZooKeeper restarts, again and again. */
  leaderRestarts?: boolean;
  record(fault: FaultEvent): void;
  warn(line: string): void;
}

const FIRST_KINDS: FaultKind[] = ['kill', 'stop', 'freeze', 'cut', 'lose-replies', 'expire', 'restart'];
const REPEATED_KINDS: FaultKind[] = ['kill', 'stop', 'freeze', 'cut', 'lose-replies'];
const LEADER_RESTART_KINDS: FaultKind[] = ['kill-restart', 'restart-kill'];

/** Runs faults until `plan.until`; every fault is undone before this resolves. */
export async function runFaults(plan: FaultPlan): Promise<void> {
  const { rng } = plan;
  const first = rng.shuffle(plan.leaderRestarts ? [...LEADER_RESTART_KINDS, ...FIRST_KINDS] : FIRST_KINDS);
  const repeated = plan.leaderRestarts
    ? [...REPEATED_KINDS, ...LEADER_RESTART_KINDS, ...LEADER_RESTART_KINDS]
    : REPEATED_KINDS;
  let count = 0;
  while (count < plan.maxFaults) {
    await sleep(rng.int(500, 2500));
    if (Date.now() >= plan.until) return;
    const kind = first.shift() ?? rng.pick(repeated);
    const slot = target(plan, kind);
    const ts = Date.now();
    try {
      const { target, note } = await inject(plan, kind, slot);
      plan.record({ k: 'fault', kind, target, ts, ms: Date.now() - ts, ...(note ? { note } : {}) });
      count++;
    } catch (err) {
      plan.warn(`fault ${kind} failed: ${(err as Error).message}`);
    }
  }
}

/**
 * Stops and freezes hit a worker that is not the housekeeping leader, so a
 * leader is there to revoke its claims; half the other faults hit the
 * leader, where promotion and revocation run.
 */
function target(plan: FaultPlan, kind: FaultKind): Slot {
  const leader = plan.slots.find((s) => s.worker.leader);
  if (!leader) return plan.rng.pick(plan.slots);
  if (kind === 'stop' || kind === 'freeze') return plan.rng.pick(plan.slots.filter((s) => s !== leader));
  if (kind === 'kill-restart' || kind === 'restart-kill') return leader;
  return plan.rng.chance(0.5) ? leader : plan.rng.pick(plan.slots);
}

async function inject(plan: FaultPlan, kind: FaultKind, slot: Slot): Promise<{ target: string; note?: string }> {
  const { rng } = plan;
  const target = slot.worker.name;
  switch (kind) {
    case 'kill':
      await slot.worker.kill();
      await sleep(rng.int(300, 1500));
      await slot.respawn();
      return { target, note: `replaced by ${slot.worker.name}` };
    case 'stop': {
      // Past the lease, within the session timeout: claims are revoked, the session lives.
      const ms = slot.lockDuration + rng.int(1000, 2500);
      slot.worker.stop();
      await sleep(ms);
      slot.worker.resume();
      return { target, note: `${ms} ms` };
    }
    case 'freeze':
    case 'cut': {
      const ms = kind === 'freeze' ? rng.int(1000, 10_000) : rng.int(300, 4000);
      if (kind === 'freeze') slot.proxy.freeze();
      else slot.proxy.cut();
      await sleep(ms);
      slot.proxy.restore();
      return { target, note: `${ms} ms` };
    }
    case 'lose-replies': {
      // A garbled stream cannot be resumed: the client notices when the connection is cut.
      const producer = rng.chance(0.5);
      const proxy = producer ? plan.producerProxy : slot.proxy;
      const ms = rng.int(300, 2000);
      proxy.dropReplies();
      await sleep(ms);
      proxy.cut();
      proxy.restore();
      return { target: producer ? 'producer' : target, note: `${ms} ms` };
    }
    case 'expire':
      for (const credentials of await slot.worker.credentials()) {
        await expireSession(plan.zk.connectionString, credentials);
      }
      return { target };
    case 'restart': {
      const ms = rng.int(500, 2500);
      await restart(plan, ms);
      return { target: 'zookeeper', note: `down ${ms} ms + start` };
    }
    case 'kill-restart':
    case 'restart-kill': {
      // The replacement starts 0.3-6 s after the kill: before, during or after the restart.
      const gap = rng.int(0, 5000);
      const down = rng.int(500, 2500);
      const respawnAfter = rng.int(300, 6000);
      const replace = async () => {
        await slot.worker.kill();
        await sleep(respawnAfter);
        await slot.respawn();
      };
      let replaced: Promise<void>;
      if (kind === 'kill-restart') {
        replaced = replace();
        await sleep(gap);
        await restart(plan, down);
      } else {
        await plan.zk.process.stop();
        await sleep(Math.min(gap, down));
        replaced = replace();
        await sleep(Math.max(0, down - gap));
        plan.zk.process.start();
        await plan.zk.process.waitServing();
      }
      await replaced;
      return {
        target,
        note: `gap ${gap} ms, down ${down} ms, replaced by ${slot.worker.name} ${respawnAfter} ms after`,
      };
    }
  }
}

async function restart(plan: FaultPlan, downMs: number): Promise<void> {
  await plan.zk.process.stop();
  await sleep(downMs);
  plan.zk.process.start();
  await plan.zk.process.waitServing();
}
