/**
 * A lock holder whose server granted another session timeout than it asked
 * for (ZooKeeper clamps it to its min and max): the heartbeat must run on
 * the granted one. Asked 30 s, granted 6 s: a heartbeat on 30 s would
 * notice a silent partition long after the server handed the lock on.
 * Asked 1 s, granted 3 s: on 1 s it would drop healthy links. Both holders
 * are partitioned while a contender waits; each must stop claiming before
 * its contender holds. Checked from the moments both saw.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Lock, Session } from '@zkq/core';
import { startZooKeeper, TcpProxy, uniqueRoot } from '@zkq/testing';
import { Timeline } from '../../helpers/partition.js';

test('lock: a partitioned holder is told first on the session timeout the server granted, not the one asked (30 s asked, 6 s granted; 1 s asked, 3 s granted)', async (t) => {
  const zk = await startZooKeeper({ tickTime: 500, minSessionTimeout: 3000, maxSessionTimeout: 6000, heapMb: 256 });
  t.after(() => zk.stop());
  const cases = [
    { asked: 30_000, granted: 6000 },
    { asked: 1000, granted: 3000 },
  ];
  await Promise.all(
    cases.map(async ({ asked, granted }) => {
      const namespace = uniqueRoot(`negotiated-${asked}`);
      const proxy = await TcpProxy.start(zk.connectionString);
      t.after(() => proxy.stop());
      const holderSession = await Session.connect({
        connectionString: proxy.connectionString,
        namespace,
        sessionTimeout: asked,
      });
      const contenderSession = await Session.connect({
        connectionString: zk.connectionString,
        namespace,
        sessionTimeout: 6000,
      });
      t.after(() => Promise.all([holderSession.close(), contenderSession.close()]));
      assert.equal(holderSession.sessionTimeout, granted);
      const holder = new Lock(holderSession, '/lock', { id: 'holder' });
      const contender = new Lock(contenderSession, '/lock', { id: 'contender' });
      await holder.acquire();
      // a healthy link is kept: more than a granted timeout of quiet, still held
      await new Promise((resolve) => setTimeout(resolve, granted + 1000));
      assert.ok(holder.isHeld, `asked ${asked} ms: a healthy holder lost its lock`);
      const times = new Timeline();
      holder.once('suspended', () => times.mark(holder.isHeld ? 'suspended yet claiming' : 'holder stops claiming'));
      const contended = contender.acquire({ timeout: granted * 6 + 30_000 }).then(() => {
        times.mark('contender holds');
        if (holder.isHeld) times.mark('both claim');
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      times.mark('partition');
      proxy.partition();
      await contended;
      const label = `asked ${asked} ms, granted ${granted} ms: ${times}`;
      t.diagnostic(label);
      assert.equal(times.at.has('both claim'), false, label);
      assert.ok(times.of('holder stops claiming') < times.of('contender holds'), label);
      proxy.restore();
      await contender.release();
    }),
  );
});
