/**
 * What walking ahead costs a busy leader: on a queue whose current hour
 * always holds a job not due yet, the leader looks at every due time and
 * at every add, but walks on past that job to the containers ahead (to
 * remove those left empty: empty-containers-busy.test.ts) at most once per
 * backstop period, not at each look. Counted on its own session: its
 * listings of `delayed/` (one per look) and of an hour ahead that holds a
 * job (one per walk ahead).
 */
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Session } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { cleanups } from '../../../helpers/cleanups.js';
import { startLeader } from '../../../helpers/housekeeper.js';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const HOUR = 3_600_000;
/** The leader's backstop period, ms. */
const BACKSTOP_MS = 2000;
/** Looks counted at least. */
const LOOKS = 20;

/** Counts the session's listings of each path, from `reset()` on. */
function countListings(session: Session): { of: (path: string) => number; reset: () => void } {
  const original = session.getChildren.bind(session);
  let counts = new Map<string, number>();
  session.getChildren = (path, options = {}) => {
    counts.set(path, (counts.get(path) ?? 0) + 1);
    return original(path, options);
  };
  return {
    of: (path) => counts.get(path) ?? 0,
    reset: () => {
      counts = new Map();
    },
  };
}

test('a busy leader walks past the job not due yet to the containers ahead once per backstop period', async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const queue = new Queue('busy-ahead', env);
  defer(() => queue.close());
  let listings: ReturnType<typeof countListings> | undefined;
  const { store } = await startLeader(t, env, 'busy-ahead', {
    promotePollMs: BACKSTOP_MS,
    before: (_store, session) => {
      listings = countListings(session);
    },
  });
  const { layout } = store;
  // a job in the middle of an hour two hours ahead: a walk ahead lists its hour, and stops there
  const delay = (Math.floor((Date.now() + 2 * HOUR) / HOUR) + 0.5) * HOUR - Date.now();
  const hour = layout.delayHour(Date.now() + delay);
  await queue.add('far', {}, { delay });
  // a steady flow: a job due in 5 s every 0.3 s, so the current hour always holds some not due yet
  let flowing = true;
  await queue.add('soon', {}, { delay: 5000 });
  const flow = (async () => {
    while (flowing) {
      await sleep(300);
      await queue.add('soon', {}, { delay: 5000 });
    }
  })();
  defer(async () => {
    flowing = false;
    await flow;
  });
  const count = listings as ReturnType<typeof countListings>;
  // counted from looks that all see a job not due yet
  const seen = count.of(layout.delayedDir);
  await waitFor(() => count.of(layout.delayedDir) >= seen + 2, { what: 'two looks of the busy queue' });
  count.reset();
  const from = performance.now();
  await waitFor(() => count.of(layout.delayedDir) >= LOOKS && performance.now() - from >= 2 * BACKSTOP_MS, {
    timeoutMs: 60_000,
    what: `${LOOKS} looks of the leader over two backstop periods`,
  });
  const elapsed = performance.now() - from;
  const looks = count.of(layout.delayedDir);
  const ahead = count.of(hour);
  t.diagnostic(`${looks} looks in ${Math.round(elapsed)} ms, ${ahead} of them walked ahead`);
  assert.ok(ahead >= 1, 'the leader walked ahead of the jobs not due yet');
  // one per period, and one more for a look under way when the count began
  const bound = Math.floor(elapsed / BACKSTOP_MS) + 2;
  assert.ok(ahead <= bound, `${ahead} walks ahead in ${Math.round(elapsed)} ms: at most ${bound}`);
  assert.ok(ahead < looks, 'not every look walked ahead');
});
