/**
 * A worker registers as EPHEMERAL `workers/<id>` on each new session. The
 * node its previous session made may still be there (that session has not
 * expired yet): it is replaced, or the worker would vanish from the list of
 * live workers when the old session expires.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NoNodeError, Session } from '@zkq/core';
import { obliterate, QueueStore } from '@zkq/core/internal';
import { cleanups } from '../../../helpers/cleanups.js';
import { OP, request } from '../../../helpers/fault-proxy.js';
import { proxied } from '../../../helpers/proxied-worker.js';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

test("registerWorker replaces the node of the worker's previous session, and keeps its own", async (t) => {
  const env = await queueEnv(t);
  const old = new QueueStore((await prefixSession(t, env)) as Session, 'q');
  const current = new QueueStore((await prefixSession(t, env)) as Session, 'q');
  await old.registerWorker('w1', { id: 'w1', session: 'old' });
  await current.registerWorker('w1', { id: 'w1', session: 'new' });
  const path = current.layout.worker('w1');
  const read = await current.session.getData(path);
  assert.equal(read.stat.ephemeralOwner, current.session.sessionId, 'owned by the current session');
  assert.equal(JSON.parse(read.data.toString()).session, 'new');
  // registering again on the same session (a create whose reply was lost) keeps the node
  await current.registerWorker('w1', { id: 'w1', session: 'again' });
  const again = await current.session.getData(path);
  assert.equal(again.stat.ctime, read.stat.ctime, 'the same node');
  await old.session.close();
  assert.ok(await current.session.exists(path), 'still registered once the old session is gone');
});

test('registerWorker into a queue obliterated by another client fails with NoNodeError and makes nothing', async (t) => {
  const env = await queueEnv(t);
  const worker = new QueueStore((await prefixSession(t, env)) as Session, 'gone');
  await worker.registerWorker('w1', { id: 'w1' });
  const other = new QueueStore((await prefixSession(t, env)) as Session, 'gone');
  await obliterate(other, { force: true });
  // the worker's store still thinks the queue made (as after a new session, registering again)
  await assert.rejects(worker.registerWorker('w1', { id: 'w1' }), NoNodeError);
  assert.equal(await other.session.exists(other.layout.root), null);
});

test("a registration whose reply was lost, replacing the previous session's node, leaves the worker's own node", async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const old = new QueueStore((await prefixSession(t, env)) as Session, 'lost');
  await old.registerWorker('w1', { id: 'w1', session: 'old' });
  const cut = await Session.connect({ ...via.connection, namespace: `/${env.prefix}` });
  defer(() => cut.close());
  const current = new QueueStore(cut, 'lost');
  await current.init();
  // the delete of the old node and the create of the new one apply; the reply is lost
  const lost = proxy.loseReply(request(OP.multi, current.layout.worker('w1')));
  await current.registerWorker('w1', { id: 'w1', session: 'new' });
  assert.ok(lost.hasFired, "the registration's reply was lost");
  const read = await old.session.getData(current.layout.worker('w1'));
  assert.equal(read.stat.ephemeralOwner, cut.sessionId, "the worker's current session holds it");
  assert.equal(JSON.parse(read.data.toString()).session, 'new');
  await old.session.close();
  assert.ok(await current.session.exists(current.layout.worker('w1')), 'still registered once the old session is gone');
});
