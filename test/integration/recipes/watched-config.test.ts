import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WatchedConfig } from '@zkq/core';
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { expire, sessionsOn } from '../../fixtures/recipes/helpers.js';
import { nextEvent, testSession, waitFor } from '../../helpers/zk.js';

interface Settings {
  rate: number;
}

test('watched config: follows creation, changes and deletion', async (t) => {
  const { sessions } = await sessionsOn(t, 2);
  const config = new WatchedConfig<Settings>(sessions[0]!, '/cfg/settings', { initial: { rate: 1 } });
  const seen: (Settings | undefined)[] = [];
  config.on('change', (v) => seen.push(v));
  await config.start();
  assert.deepEqual(config.value, { rate: 1 });
  assert.equal(config.version, -1);

  const writer = new WatchedConfig<Settings>(sessions[1]!, '/cfg/settings');
  await writer.set({ rate: 5 });
  await waitFor(() => config.value?.rate === 5, { what: 'created value' });
  await writer.set({ rate: 7 });
  await waitFor(() => config.value?.rate === 7, { what: 'changed value' });
  assert.equal(config.version, 1);
  const invalid = nextEvent(config, 'invalid');
  await sessions[1]!.setData('/cfg/settings', Buffer.from('not json'));
  const [error] = await invalid;
  assert.ok(error instanceof SyntaxError);
  assert.equal(config.value?.rate, 7, 'an unparsable value keeps the previous one');
  await sessions[1]!.delete('/cfg/settings');
  await waitFor(() => config.version === -1, { what: 'deletion seen' });
  assert.deepEqual(config.value, { rate: 1 });
  assert.deepEqual(seen, [{ rate: 5 }, { rate: 7 }, { rate: 1 }]);
  config.close();
});

test('watched config: survives a session expiry', async (t) => {
  const { sessions } = await sessionsOn(t, 2);
  const config = new WatchedConfig<Settings>(sessions[0]!, '/settings', {
    parse: (data) => ({ rate: Number(data.toString()) }),
    serialize: (v) => Buffer.from(String(v.rate)),
  });
  await config.set({ rate: 1 });
  await config.start();
  assert.equal(config.value?.rate, 1);
  await expire(sessions[0]!);
  await sessions[1]!.setData('/settings', Buffer.from('2')); // changed while the watch was gone
  await waitFor(() => config.value?.rate === 2, { what: 'value re-read on the new session', timeoutMs: 30_000 });
  await sessions[1]!.setData('/settings', Buffer.from('3'));
  await waitFor(() => config.value?.rate === 3, { what: 'watching again after expiry' });
  config.close();
});

test('watched config: follows changes after an outage longer than the session timeout', async (t) => {
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const { namespace, sessions } = await sessionsOn(t, 1);
  const behind = await testSession(t, {
    namespace,
    connectionString: proxy.connectionString,
    sessionTimeout: 2000,
    requestTimeout: 1000,
    retry: { maxAttempts: 2 },
  });
  const config = new WatchedConfig<Settings>(behind, '/settings');
  t.after(() => config.close());
  const failures: unknown[] = [];
  config.on('refreshFailed', (err) => failures.push(err));
  await sessions[0]!.create('/settings', Buffer.from('{"rate":1}'));
  await config.start();
  assert.equal(config.value?.rate, 1);
  const lost = nextEvent(behind, 'lost', 30_000);
  proxy.cut();
  await lost;
  await waitFor(() => failures.length > 0, { what: 'a failed re-read during the outage' });
  await sessions[0]!.setData('/settings', Buffer.from('{"rate":2}'));
  proxy.restore();
  await waitFor(() => config.value?.rate === 2, { what: 'the change made during the outage' });
  await sessions[0]!.setData('/settings', Buffer.from('{"rate":3}'));
  await waitFor(() => config.value?.rate === 3, { what: 'watching again after the outage' });
});
