/**
 * Session.sync: a write barrier (a multi of one `check` at any version). On a
 * private server nobody else writes, so each sync must advance the server's
 * zxid by exactly one: it went through the leader's write pipeline, which is
 * what makes later reads on this session see everything committed before it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SessionClosedError } from '@zkq/core';
import { fourLetterWord, startZooKeeper } from '@zkq/testing';
import { testSession } from '../../helpers/zk.js';

async function privateServer(t: { after(fn: () => unknown): void }) {
  const server = await startZooKeeper();
  t.after(() => server.stop());
  const port = Number(server.connectionString.split(':')[1]);
  const zxid = async () => {
    const match = (await fourLetterWord(port, 'srvr')).match(/Zxid: 0x([0-9a-f]+)/);
    assert.ok(match, 'srvr reports the zxid');
    return BigInt(`0x${match[1]}`);
  };
  return { connectionString: server.connectionString, zxid };
}

test('sync: each call is one write ordered by the leader, on an existing or a missing path', async (t) => {
  const { connectionString, zxid } = await privateServer(t);
  const s = await testSession(t, { connectionString });
  await s.create('/q');
  const before = await zxid();
  await s.sync('/q');
  assert.equal(await zxid(), before + 1n, 'sync on an existing node is one write');
  await s.sync('/missing');
  assert.equal(await zxid(), before + 2n, 'a failed check is ordered all the same, and sync resolves');
  await s.sync();
  assert.equal(await zxid(), before + 3n, 'the default path is the namespace root');
  await s.getChildren('/q');
  assert.equal(await zxid(), before + 3n, 'a read is not a write');
});

test('sync: rejects with SessionClosedError after close()', async (t) => {
  const s = await testSession(t);
  await s.sync('/');
  await s.close();
  await assert.rejects(s.sync('/'), SessionClosedError);
});
