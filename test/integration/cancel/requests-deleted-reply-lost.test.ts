/**
 * A cancel request deleted (by the leader's sweep, left by an ended attempt;
 * by the worker that acted on it) whose transaction's reply was lost after
 * the server applied it leaves the request made meanwhile under the same
 * name. A job of the same id added again has the same tokens (its pointer's
 * versions count from 0 again), so a cancel of its attempt on the same
 * worker makes a request of the same name, back at version 0: sent again as
 * it was, the delete took it, and the cancel was lost.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimJobs, dropCancelRequests, requestCancel, scanHead, sweepCancels } from '@zkq/core/internal';
import { OP, request } from '../../helpers/fault-proxy.js';
import { within } from '../../helpers/proxied-worker.js';
import { storeAcrossProxy } from '../../helpers/reply-lost.js';

test('a cancel request swept whose reply was lost leaves the request made again under its name', async (t) => {
  const { proxy, mine, other, queue } = await storeAcrossProxy(t, 'cancel-sweep-reply-lost');
  const { layout, session } = other;
  // a request left by the first attempt (token 1) of an earlier job of id c-1, on worker w
  await other.ensureDir(layout.cancelsOf('w'));
  await session.create(layout.cancel('w', 'c-1', 1), Buffer.from(JSON.stringify({ at: Date.now() })));
  let reconnect!: () => void;
  const released = new Promise<void>((r) => {
    reconnect = r;
  });
  const lost = proxy.loseReply(request(OP.multi, '/c-1-1'), released);
  const sweep = sweepCancels(mine, () => []);
  await within(lost.fired, 'the sweep sent, its reply lost');
  // while the leader is cut off: the id is added again, its first attempt runs on w, and is cancelled
  await queue.add('j', {}, { jobId: 'c-1' });
  const head = await scanHead(other, { limit: 10, exclude: new Set() });
  const { claimed } = await claimJobs(other, head, { workerId: 'w', lockDuration: 60_000 });
  assert.equal(claimed[0]?.token, 1, 'the new attempt has the token of the one before');
  assert.equal(await requestCancel(other, 'c-1', 'stop'), true);
  reconnect();
  await within(sweep, 'the sweep settled');
  assert.notEqual(await session.exists(layout.cancel('w', 'c-1', 1)), null, 'the new request is there');
});

test("a worker's drop of a request it acted on whose reply was lost leaves the request made again under its name", async (t) => {
  const { proxy, mine, other, queue } = await storeAcrossProxy(t, 'cancel-drop-reply-lost');
  const { layout, session } = other;
  await other.ensureDir(layout.cancelsOf('w'));
  await session.create(layout.cancel('w', 'c-2', 1), Buffer.from(JSON.stringify({ at: Date.now() })));
  let reconnect!: () => void;
  const released = new Promise<void>((r) => {
    reconnect = r;
  });
  const lost = proxy.loseReply(request(OP.multi, '/c-2-1'), released);
  // the worker acted on the request (its attempt aborted, or ended): it deletes it
  const drop = dropCancelRequests(mine, 'w', [{ id: 'c-2', token: 1 }]);
  await within(lost.fired, 'the drop sent, its reply lost');
  await queue.add('j', {}, { jobId: 'c-2' });
  const head = await scanHead(other, { limit: 10, exclude: new Set() });
  const { claimed } = await claimJobs(other, head, { workerId: 'w', lockDuration: 60_000 });
  assert.equal(claimed[0]?.token, 1, 'the new attempt has the token of the one before');
  assert.equal(await requestCancel(other, 'c-2', 'stop'), true);
  reconnect();
  await within(drop, 'the drop settled');
  assert.notEqual(await session.exists(layout.cancel('w', 'c-2', 1)), null, 'the new request is there');
});
