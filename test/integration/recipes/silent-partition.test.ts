/**
 * Holders under a silent partition (no byte and no close gets through, a
 * pulled cable): a lock holder, a read/write lock holder and a leader must
 * be told (`isHeld` / `isLeader` false, `suspended`) before the server can
 * hand what they hold to another. Checked from timestamps: the moment the
 * holder stops claiming it comes before the moment another holds it.
 * Sessions of 6 and 12 s run side by side; 30 s for the lock alone.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaderElection, Lock, ReadWriteLock, type Session } from '@zkq/core';
import { cleanups, type Defer } from '../../helpers/cleanups.js';
import { PARTITION_SESSION_TIMEOUTS, sessionBehindProxy, Timeline } from '../../helpers/partition.js';
import { testSession } from '../../helpers/zk.js';

type Ctx = { after(fn: () => unknown): void; name?: string; diagnostic(message: string): void };

/** One recipe's holder and contender, as the test drives them. */
interface Contest {
  /** Makes the holder hold (resolves once it does). */
  hold(): Promise<void>;
  /** Whether the holder claims to hold now. */
  holds(): boolean;
  /** Emits `suspended` / `lost` (or `deposed`) when the holder is told. */
  holder: { once(event: string, fn: () => void): unknown };
  /** Resolves once the contender holds. */
  contend(): Promise<void>;
  /** Whether the contender claims to hold now. */
  contenderHolds(): boolean;
}

/**
 * Partitions the holder's link while a contender waits, and checks that the
 * holder stopped claiming before the contender held, and never claimed again
 * while the contender held.
 */
async function holderToldFirst(
  t: Ctx,
  defer: Defer,
  sessionTimeout: number,
  make: (holder: Session, contender: Session) => Contest,
): Promise<void> {
  const { proxy, session } = await sessionBehindProxy(t, defer, { sessionTimeout });
  const other = await testSession(t, { namespace: session.namespace });
  const contest = make(session, other);
  await contest.hold();
  assert.ok(contest.holds());
  const times = new Timeline();
  for (const event of ['suspended', 'lost', 'deposed']) {
    contest.holder.once(event, () => {
      times.mark(`holder ${event}`);
      if (!contest.holds()) times.mark('holder stops claiming');
    });
  }
  const contended = contest.contend().then(() => {
    times.mark('contender holds');
    if (contest.holds()) times.mark('both claim');
  });
  // the contender is queued behind the holder before the link dies
  await new Promise((resolve) => setTimeout(resolve, 200));
  times.mark('partition');
  proxy.partition();
  await contended;
  const label = `session of ${sessionTimeout} ms: ${times}`;
  t.diagnostic(label);
  assert.equal(times.at.has('both claim'), false, label);
  assert.ok(times.of('holder stops claiming') < times.of('contender holds'), label);
  proxy.restore();
  assert.ok(contest.contenderHolds(), label);
}

/** What a lock (or a side of a read/write lock) offers a contest. */
type Acquirable = Contest['holder'] & {
  acquire(opts?: { timeout?: number }): Promise<unknown>;
  readonly isHeld: boolean;
};

/** The contest of lock `a`, held by the holder, and lock `b`, wanted by the contender. */
function locksContest(a: Acquirable, b: Acquirable): Contest {
  return {
    hold: async () => void (await a.acquire()),
    holds: () => a.isHeld,
    holder: a,
    contend: async () => void (await b.acquire({ timeout: 120_000 })),
    contenderHolds: () => b.isHeld,
  };
}

function lockContest(holder: Session, contender: Session): Contest {
  return locksContest(new Lock(holder, '/lock', { id: 'holder' }), new Lock(contender, '/lock', { id: 'contender' }));
}

test('lock, read/write lock and leadership: the partitioned holder is told before another holds (6 and 12 s sessions)', {
  concurrency: true,
}, async (t) => {
  const defer = cleanups(t);
  const cases: [string, (holder: Session, contender: Session) => Contest][] = [
    ['lock', lockContest],
    [
      'write lock against a reader',
      (holder, contender) =>
        locksContest(
          new ReadWriteLock(holder, '/rw', { id: 'writer' }).writeLock,
          new ReadWriteLock(contender, '/rw', { id: 'reader' }).readLock,
        ),
    ],
    [
      'read lock against a writer',
      (holder, contender) =>
        locksContest(
          new ReadWriteLock(holder, '/rw', { id: 'reader' }).readLock,
          new ReadWriteLock(contender, '/rw', { id: 'writer' }).writeLock,
        ),
    ],
    [
      'leadership',
      (holder, contender) => {
        const a = new LeaderElection(holder, '/election', { id: 'leader' });
        const b = new LeaderElection(contender, '/election', { id: 'follower' });
        defer(() => a.close().catch(() => undefined));
        defer(() => b.close().catch(() => undefined));
        return {
          hold: async () => {
            await a.start();
            await a.waitUntilLeader({ timeout: 30_000 });
          },
          holds: () => a.isLeader,
          holder: a,
          contend: async () => {
            await b.start();
            await b.waitUntilLeader({ timeout: 120_000 });
          },
          contenderHolds: () => b.isLeader,
        };
      },
    ],
  ];
  await Promise.all(
    cases.flatMap(([name, make]) =>
      PARTITION_SESSION_TIMEOUTS.map((sessionTimeout) =>
        t.test(`${name}, session of ${sessionTimeout} ms`, (st) => holderToldFirst(st, defer, sessionTimeout, make)),
      ),
    ),
  );
});

test('lock: the partitioned holder is told before another holds (30 s session)', async (t) => {
  await holderToldFirst(t, cleanups(t), 30_000, lockContest);
});
