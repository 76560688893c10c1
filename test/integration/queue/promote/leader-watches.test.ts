/**
 * The leader's looks follow its watches: idle, it sends nothing until a
 * watch fires, a due time it knows comes, or its backstop period (about a
 * third of the session timeout) passes; before, it listed `delayed/` every
 * second and `schedulers/` every 2 s whatever happened. A watch lost with
 * the connection costs nothing: the leader looks again when its session
 * reconnects; one lost for good costs at most the backstop period.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Session } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { cleanups } from '../../../helpers/cleanups.js';
import { promotedIds, startLeader } from '../../../helpers/housekeeper.js';
import { proxied } from '../../../helpers/proxied-worker.js';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

/** A session whose backstop period (a third of it, less half a second) is longer than the window counted. */
const SESSION_MS = 30_000;
const WINDOW_MS = 3000;

/** The session's listings of delayed containers set no watch from now on: any it sets is lost. */
function loseDelayedWatches(session: Session): { listed: () => number } {
  const original = session.getChildren.bind(session);
  let listed = 0;
  session.getChildren = (path, options = {}) => {
    if (!path.includes('/delayed')) return original(path, options);
    listed++;
    return original(path, {});
  };
  return { listed: () => listed };
}

test('an idle leader sends no request until a watch fires, then promotes at the due time', async (t) => {
  const env = await queueEnv(t, SESSION_MS);
  const queue = new Queue('leader-idle', env);
  t.after(() => queue.close());
  const { keeper, session } = await startLeader(t, env, 'leader-idle');
  const promoted = promotedIds(keeper);
  // its first looks as the leader (the delayed jobs, the schedulers, a measure of the clock) are done
  await waitFor(
    async () => {
      const sent = session.stats.requests;
      await sleep(300);
      return sent >= 2 && session.stats.requests === sent;
    },
    { what: 'the first looks done' },
  );
  const before = session.stats.requests;
  await sleep(WINDOW_MS);
  const sent = session.stats.requests - before;
  t.diagnostic(`an idle leader sent ${sent} requests over ${WINDOW_MS} ms`);
  // at most a measure of ZooKeeper's clock; the session's probe comes after a third of its timeout
  assert.ok(sent <= 1, `an idle leader sent ${sent} requests over ${WINDOW_MS} ms, at most 1`);
  const job = await queue.add('later', {}, { delay: 300 });
  await waitFor(() => promoted.has(job.id), { timeoutMs: 15_000, what: 'the job promoted, woken by a watch' });
});

test('a watch lost with the connection: the leader looks again when its session reconnects', async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const queue = new Queue('leader-reconnect', env);
  defer(() => queue.close());
  let lost: { listed: () => number } | undefined;
  // only a watch or a new connection can wake it: its backstop is stretched
  const { keeper, session } = await startLeader(t, via, 'leader-reconnect', {
    promotePollMs: 600_000,
    before: (_store, s) => {
      lost = loseDelayedWatches(s);
    },
  });
  const promoted = promotedIds(keeper);
  await waitFor(() => (lost?.listed() ?? 0) > 0, { what: 'the first look at the delayed jobs' });
  const looked = lost?.listed() ?? 0;
  const job = await queue.add('later', {}, { delay: 200 });
  await sleep(1000);
  assert.equal(lost?.listed(), looked, 'no watch told the leader of the job: it did not look');
  assert.ok(!promoted.has(job.id));
  const reconnected = new Promise<void>((resolve) => session.once('reconnected', () => resolve()));
  proxy.dropConnections();
  await reconnected;
  await waitFor(() => promoted.has(job.id), { timeoutMs: 15_000, what: 'the job promoted after the reconnection' });
});

test('a watch lost for good: the leader promotes at its backstop period', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('leader-backstop', env);
  t.after(() => queue.close());
  let lost: { listed: () => number } | undefined;
  const { keeper } = await startLeader(t, env, 'leader-backstop', {
    promotePollMs: 1500,
    before: (_store, s) => {
      lost = loseDelayedWatches(s);
    },
  });
  const promoted = promotedIds(keeper);
  await waitFor(() => (lost?.listed() ?? 0) > 0, { what: 'the first look at the delayed jobs' });
  const job = await queue.add('later', {}, { delay: 200 });
  await waitFor(() => promoted.has(job.id), { timeoutMs: 15_000, what: 'the job promoted at the backstop' });
});
