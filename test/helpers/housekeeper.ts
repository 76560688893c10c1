/**
 * A queue's leader housekeeper started by a test on its own session, apart
 * from any worker: it is elected before a worker's own housekeeper joins,
 * so its timings (the promoter's poll, the sweep's period) are the ones in
 * force. Closed, with its session, after the test.
 */
import type { Session } from '@zkq/core';
import { Housekeeper, openSession, QueueStore } from '@zkq/core/internal';
import type { QueueTestEnv } from './queue.js';
import { nextEvent } from './zk.js';

type Test = { after: (fn: () => unknown) => void };

export interface LeaderOptions {
  /** The leader's id (default `leader`). */
  id?: string;
  /** Its stalled-job interval, ms (default 60,000: no stalled checks in a test's time). */
  stalledInterval?: number;
  /** Its backstop: the longest time between two of its looks, ms (default: the Backstop's period). */
  promotePollMs?: number;
  /** How often it sweeps, ms. */
  sweepMs?: number;
  /** Runs on the initialised store before the housekeeper is made (to arm a fault). */
  before?: (store: QueueStore, session: Session) => Promise<void> | void;
}

/** Starts the leader housekeeper of queue `name` and waits until it is elected. */
export async function startLeader(
  t: Test,
  env: QueueTestEnv,
  name: string,
  opts: LeaderOptions = {},
): Promise<{ keeper: Housekeeper; store: QueueStore; session: Session }> {
  const session = await openSession(env.connection, env.prefix);
  const store = new QueueStore(session, name);
  await store.init();
  await opts.before?.(store, session);
  const keeper = new Housekeeper(
    store,
    opts.id ?? 'leader',
    opts.stalledInterval ?? 60_000,
    opts.promotePollMs,
    opts.sweepMs,
  );
  t.after(async () => {
    await keeper.close();
    await session.close();
  });
  const elected = nextEvent(keeper, 'elected');
  await keeper.start();
  await elected;
  return { keeper, store, session };
}

/** The ids `keeper` promotes from now on, as a set that grows. */
export function promotedIds(keeper: Housekeeper): Set<string> {
  const promoted = new Set<string>();
  keeper.on('promoted', (ids) => {
    for (const id of ids) promoted.add(id);
  });
  return promoted;
}

/** A housekeeper on a session of its own; the session's requests are counted in `session.stats`. */
export interface Member {
  session: Session;
  keeper: Housekeeper;
}

/**
 * `standbys + 1` housekeepers of queue `name`, each on its own session (its store initialised, its
 * clock read once), their errors ignored: the first started and elected, then the others started,
 * as standbys. Closed, with their sessions, after the test.
 */
export async function leaderAndStandbys(t: Test, env: QueueTestEnv, name: string, standbys: number) {
  const members: Member[] = [];
  for (let i = 0; i <= standbys; i++) {
    const session = await openSession(env.connection, env.prefix);
    const store = new QueueStore(session, name);
    await store.init();
    await store.clock.now();
    const keeper = new Housekeeper(store, `member-${i}`, 60_000);
    keeper.on('error', () => undefined);
    t.after(async () => {
      await keeper.close();
      await session.close();
    });
    members.push({ session, keeper });
  }
  const leader = members[0] as Member;
  const elected = nextEvent(leader.keeper, 'elected');
  await leader.keeper.start();
  await elected;
  for (const m of members.slice(1)) await m.keeper.start();
  return members;
}
