/**
 * `Session.connection` numbers the connection requests go out on: it stays
 * while the connection lives, and moves on when it drops and again when it
 * is made anew (the same session or a new one), so that two replies read at
 * the same number came on one connection, in order.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sessionThroughProxy } from '../../helpers/partition.js';
import { expire, nextEvent } from '../../helpers/zk.js';

test('the connection number stays while the connection lives and moves on at a drop, a reconnection and an expiry', async (t) => {
  const { proxy, session: s } = await sessionThroughProxy(t, { sessionTimeout: 15_000 });
  const first = s.connection;
  await s.create('/a');
  await s.getData('/a');
  assert.equal(s.connection, first, 'requests answered: the same connection');

  const suspended = nextEvent(s, 'suspended');
  proxy.cut();
  await suspended;
  const down = s.connection;
  assert.ok(down > first, 'moved on when the connection dropped');
  const reconnected = nextEvent(s, 'reconnected', 30_000);
  proxy.restore();
  await reconnected;
  const again = s.connection;
  assert.ok(again > down, 'moved on when the connection was made again');
  await s.getData('/a');
  assert.equal(s.connection, again);

  await expire(s, proxy.connectionString);
  assert.ok(s.connection > again, 'moved on with a new session');
});

test('a silent partition (nothing answered, no close): the number moves on when the heartbeat drops the connection', async (t) => {
  const { proxy, session: s } = await sessionThroughProxy(t, { sessionTimeout: 6000, requestTimeout: 1000 });
  await s.create('/a');
  const first = s.connection;
  const suspended = nextEvent(s, 'suspended', 30_000);
  proxy.freeze(); // bytes and the server's close both held, as with a pulled cable
  await suspended;
  const down = s.connection;
  assert.ok(down > first, 'moved on when the connection was given up');
  const reconnected = nextEvent(s, 'reconnected', 30_000);
  proxy.restore();
  await reconnected;
  assert.ok(s.connection > down, 'moved on when the connection was made again');
  await s.getData('/a');
});
