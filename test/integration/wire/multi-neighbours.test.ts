/**
 * The session's write multis are parsed in place, by a flag set around its
 * own connection's reply handler: a plain node-zookeeper-client in the same
 * process, committing its own transactions at the same time, keeps the
 * library's parse (its Stat records), and neither side gets the other's
 * results; failed multis of both report their failing op. (Holds.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sharedZooKeeper } from '@zkq/testing';
import zookeeper from 'node-zookeeper-client';
import { testSession } from '../../helpers/zk.js';

type TxResult = { type: number; path?: string; stat?: zookeeper.Stat; err?: number };

test('a plain client and a session commit multis side by side, each parsed as its own', async (t) => {
  const s = await testSession(t);
  await s.ensurePath('/box');
  const plain = zookeeper.createClient(await sharedZooKeeper(), { retries: 0 });
  t.after(() => plain.close());
  await new Promise<void>((resolve) => {
    plain.once('connected', () => resolve());
    plain.connect();
  });
  const root = `${s.namespace}/box`;
  const commit = (tx: zookeeper.Transaction) =>
    new Promise<{ err: unknown; results: TxResult[] }>((resolve) =>
      tx.commit((err, results) => resolve({ err, results: results as TxResult[] })),
    );
  const rounds = 20;
  const work: Promise<void>[] = [];
  for (let i = 0; i < rounds; i++) {
    work.push(
      (async () => {
        const mine = s.multi([
          { op: 'create', path: `/box/s-${i}-`, data: Buffer.from('s'), mode: 'persistent_sequential' },
          { op: 'setData', path: '/box', data: Buffer.from(String(i)) },
        ]);
        const theirs = commit(
          plain
            .transaction()
            .create(`${root}/p-${i}`, Buffer.from('p'))
            .setData(`${root}/p-${i}`, Buffer.from('q'), -1)
            .check(`${root}/p-${i}`, 1),
        );
        const failing = commit(plain.transaction().check(`${root}/p-${i}`, 7).remove(`${root}/missing`));
        const [m, p, f] = await Promise.all([mine, theirs, failing]);
        assert.match((m[0] as { path: string }).path, new RegExp(`^/box/s-${i}-\\d{10}$`));
        const stat = (m[1] as { stat: { version: unknown; czxid: unknown } }).stat;
        assert.equal(typeof stat.version, 'number');
        assert.equal(typeof stat.czxid, 'number', 'the session gets its stats converted');
        assert.equal(p.err, null);
        assert.deepEqual(
          p.results.map((r) => r.type),
          [1, 5, 13],
        );
        assert.equal(p.results[0]?.path, `${root}/p-${i}`);
        assert.ok(Buffer.isBuffer(p.results[1]?.stat?.czxid), "the plain client keeps the library's Stat record");
        assert.equal(p.results[1]?.stat?.version, 1);
        assert.ok(f.err, 'a failed transaction reports its error');
        assert.equal((f.err as zookeeper.Exception).getCode(), zookeeper.Exception.BAD_VERSION);
      })(),
    );
  }
  await Promise.all(work);
  await assert.rejects(
    s.multi([
      { op: 'check', path: '/box', version: -1 },
      { op: 'delete', path: '/box/missing' },
    ]),
    (err: { opIndex?: number }) => err.opIndex === 1,
  );
});
