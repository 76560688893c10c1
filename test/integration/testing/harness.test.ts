/** @zkq/testing: servers, start failures, ports and the TCP proxy. */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout } from 'node:timers/promises';
import { Session } from '@zkq/core';
import {
  fourLetterWord,
  freePort,
  freePorts,
  sharedZooKeeper,
  startZooKeeper,
  TcpProxy,
  ZooKeeperStartError,
} from '@zkq/testing';
import { nextEvent, testSession } from '../../helpers/zk.js';

test('startZooKeeper: serves on loopback, and stop() kills it and removes its directory', async (t) => {
  const before = new Set(readdirSync(tmpdir()).filter((d) => d.startsWith('zkq-zk-')));
  const server = await startZooKeeper({ heapMb: 128 });
  t.after(() => server.stop());
  const dirs = readdirSync(tmpdir())
    .filter((d) => d.startsWith('zkq-zk-') && !before.has(d))
    .map((d) => join(tmpdir(), d));
  assert.match(server.connectionString, /^127\.0\.0\.1:\d+$/);
  assert.equal(server.process.running, true);
  assert.equal(await server.process.mode(), 'standalone');
  assert.equal(await fourLetterWord(server.process.clientPort, 'ruok'), 'imok');

  const s = await Session.connect({ connectionString: server.connectionString, namespace: '/h' });
  await s.create('/x', Buffer.from('1'));
  assert.equal((await s.getData('/x')).data.toString(), '1');
  await s.close();

  assert.equal(dirs.length, 1, 'the server made one temporary directory');
  const dir = dirs[0] as string;
  assert.ok(existsSync(join(dir, 'zoo.cfg')));
  await server.stop();
  assert.equal(server.process.running, false);
  assert.equal(existsSync(dir), false, 'stop() removed the directory');
  assert.equal(await server.process.mode(), undefined, 'nothing answers on the port');
  await server.stop(); // idempotent
});

test('ZooKeeperStartError: a taken client port fails the start with the log tail', async (t) => {
  // Holds the port; probes of the starting server (`srvr`) are hung up on.
  const blocker: Server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
  const address = blocker.address();
  assert.ok(address && typeof address === 'object');
  const dataDir = mkdtempSync(join(tmpdir(), 'zkq-harness-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));

  await assert.rejects(startZooKeeper({ clientPort: address.port, dataDir, heapMb: 128 }), (err: unknown) => {
    assert.ok(err instanceof ZooKeeperStartError, String(err));
    assert.equal(err.code, 'ZKQ_ZOOKEEPER_START_FAILED');
    assert.match(err.log, /Address already in use|BindException/);
    assert.ok(err.message.includes(err.log));
    return true;
  });
});

test('ZooKeeperStartError: an invalid configuration fails the start with the log tail', async () => {
  await assert.rejects(
    startZooKeeper({ minSessionTimeout: 20_000, maxSessionTimeout: 10_000, heapMb: 128 }),
    (err: unknown) => {
      assert.ok(err instanceof ZooKeeperStartError, String(err));
      assert.match(err.log, /minSessionTimeout/);
      return true;
    },
  );
});

test('freePorts: distinct, bindable ports', async () => {
  const ports = await freePorts(12);
  assert.equal(new Set(ports).size, 12);
  for (const p of ports) assert.ok(Number.isInteger(p) && p > 0 && p < 65536);
  const one = await freePort();
  const srv = createServer();
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(one, '127.0.0.1', resolve);
  });
  await new Promise<void>((resolve) => srv.close(() => resolve()));
});

test('TcpProxy: forwards, cut() drops and refuses connections, restore() lets them back', async (t) => {
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  assert.match(proxy.connectionString, /^127\.0\.0\.1:\d+$/);
  const s = await Session.connect({ connectionString: proxy.connectionString, sessionTimeout: 15_000 });
  t.after(() => s.close());
  await s.exists('/');
  assert.equal(proxy.connections, 1);

  const suspended = nextEvent(s, 'suspended');
  proxy.cut();
  assert.equal(proxy.connections, 0);
  await suspended;
  // While cut, a fresh connection is hung up on at once (no reply, maybe a reset).
  const port = Number(proxy.connectionString.split(':')[1]);
  assert.equal(await fourLetterWord(port, 'ruok').catch(() => ''), '');

  const reconnected = nextEvent(s, 'reconnected', 30_000);
  proxy.restore();
  await reconnected;
  assert.ok(await s.exists('/'));
  assert.equal(await fourLetterWord(port, 'ruok'), 'imok');
});

test('TcpProxy: freeze() holds traffic both ways and restore() delivers it in order, on the same connection', async (t) => {
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const direct = await testSession(t);
  const s = await testSession(t, {
    connectionString: proxy.connectionString,
    namespace: direct.namespace,
    sessionTimeout: 30_000,
    requestTimeout: 30_000,
  });
  await s.create('/n', Buffer.from('0'));
  const events: string[] = [];
  let fired!: () => void;
  const watchFired = new Promise<void>((resolve) => {
    fired = resolve;
  });
  await s.getData('/n', {
    watch: (e) => {
      events.push(e.type);
      fired();
    },
  });
  let reconnects = 0;
  s.on('reconnected', () => reconnects++);

  proxy.freeze();
  await direct.setData('/n', Buffer.from('1')); // fires the watch while the link is frozen
  let answered = false;
  const read = s.getData('/n').then((r) => {
    answered = true; // sent while frozen: it hangs, it is not lost
    return r;
  });
  await setTimeout(300);
  assert.deepEqual(events, [], 'nothing gets through a freeze');
  assert.equal(answered, false);

  proxy.restore();
  assert.equal((await read).data.toString(), '1');
  await watchFired; // the watch event held by the freeze arrives
  assert.deepEqual(events, ['dataChanged']);
  assert.equal(reconnects, 0, 'the connection went on');
  assert.equal(proxy.connections, 1);
});

test('TcpProxy: partition() drops bytes and closes both ways, and restore() ends the connections it severed', async (t) => {
  const serverSide = new Set<Socket>();
  const echo: Server = createServer((socket) => {
    serverSide.add(socket);
    socket.on('data', (d) => socket.write(d));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => echo.close(resolve)));
  const address = echo.address() as { port: number };
  const proxy = await TcpProxy.start(`127.0.0.1:${address.port}`);
  t.after(() => proxy.stop());
  const port = Number(proxy.connectionString.split(':')[1]);
  const open = async () => {
    const socket = connect({ host: '127.0.0.1', port });
    const got: string[] = [];
    let closed = false;
    socket.on('data', (d) => got.push(d.toString()));
    socket.on('close', () => {
      closed = true;
    });
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    return { socket, got, isClosed: () => closed };
  };
  const link = await open();
  link.socket.write('a');
  while (link.got.join('') !== 'a') await setTimeout(10);

  proxy.partition();
  link.socket.write('b');
  for (const s of serverSide) s.destroy(); // the server hangs up: the client must not hear of it
  const late = await open(); // accepted, goes nowhere
  late.socket.write('c');
  await setTimeout(300);
  assert.equal(link.got.join(''), 'a', 'no byte gets through a partition');
  assert.equal(link.isClosed(), false, "the server's close does not get through");
  assert.deepEqual(late.got, []);

  proxy.restore();
  while (!link.isClosed() || !late.isClosed()) await setTimeout(10);
  const fresh = await open();
  fresh.socket.write('d');
  while (fresh.got.join('') !== 'd') await setTimeout(10);
  fresh.socket.destroy();
});
