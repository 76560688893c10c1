/** @zkq/testing's Redis helpers, against a scripted server (no redis-server needed). */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { findRedisServer, redisCommand, redisInfo } from '@zkq/testing';

/** A server on a free loopback port that answers every command with `reply` (written in pieces). */
async function scripted(t: { after(fn: () => unknown): void }, reply: string[]): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createServer((sock) => {
    sockets.add(sock);
    sock.once('data', async () => {
      for (const piece of reply) {
        sock.write(piece);
        await new Promise((r) => setTimeout(r, 5));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return (server.address() as { port: number }).port;
}

test('redisCommand: simple, integer and bulk replies, a bulk reply split over several packets', async (t) => {
  assert.equal(await redisCommand(await scripted(t, ['+PONG\r\n']), ['PING']), 'PONG');
  assert.equal(await redisCommand(await scripted(t, [':42\r\n']), ['DBSIZE']), '42');
  const port = await scripted(t, ['$11\r\nhel', 'lo wo', 'rld\r\n']);
  assert.equal(await redisCommand(port, ['GET', 'k']), 'hello world');
  assert.equal(await redisCommand(await scripted(t, ['$-1\r\n']), ['GET', 'missing']), '');
});

test('redisCommand: an error reply rejects with its text', async (t) => {
  const port = await scripted(t, ['-ERR unknown command\r\n']);
  await assert.rejects(redisCommand(port, ['NOPE']), /NOPE: ERR unknown command/);
});

test('redisInfo: the name:value lines of a section', async (t) => {
  const body = '# Stats\r\ntotal_commands_processed:17\r\ninstantaneous_ops_per_sec:3\r\n';
  const port = await scripted(t, [`$${body.length}\r\n${body}\r\n`]);
  assert.deepEqual(await redisInfo(port, 'stats'), {
    total_commands_processed: '17',
    instantaneous_ops_per_sec: '3',
  });
});

test('findRedisServer: REDIS_SERVER wins when it is executable, and is refused when it is not', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zkq-redis-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const binary = join(dir, 'redis-server');
  writeFileSync(binary, '#!/bin/sh\n');
  chmodSync(binary, 0o644);
  assert.equal(findRedisServer({ REDIS_SERVER: binary, PATH: '' }), undefined);
  chmodSync(binary, 0o755);
  assert.equal(findRedisServer({ REDIS_SERVER: binary, PATH: '' }), binary);
});
