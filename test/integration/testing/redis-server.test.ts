/**
 * @zkq/testing's startRedis against a real redis-server (installed from Debian when missing): no
 * persistence by default, the append-only file fsynced on every write when asked, each server in a
 * directory of its own, and an unknown fsync policy refused before anything starts.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { RedisOptionError, type RedisServer, redisCommand, redisInfo, startRedis } from '@zkq/testing';
import { Redis } from 'ioredis';

/** The server's running configuration (CONFIG GET), by name. */
async function configOf(server: RedisServer, ...names: string[]): Promise<Record<string, string>> {
  const client = new Redis({ host: server.host, port: server.port, lazyConnect: true });
  try {
    await client.connect();
    const out: Record<string, string> = {};
    for (const name of names) {
      const [, value] = (await client.config('GET', name)) as string[];
      out[name] = value ?? '';
    }
    return out;
  } finally {
    client.disconnect();
  }
}

test('startRedis: without persistence unless asked', async (t) => {
  const server = await startRedis();
  t.after(() => server.stop());
  assert.equal((await redisInfo(server.port, 'persistence')).aof_enabled, '0');
  assert.deepEqual(await configOf(server, 'appendonly', 'save'), { appendonly: 'no', save: '' });
});

test('startRedis: appendfsync always writes every command to an append-only file in its own directory', {}, async (t) => {
  const plain = await startRedis();
  t.after(() => plain.stop());
  const durable = await startRedis({ appendfsync: 'always' });
  t.after(() => durable.stop());
  assert.equal((await redisInfo(durable.port, 'persistence')).aof_enabled, '1');
  const { dir, ...durability } = await configOf(durable, 'appendonly', 'appendfsync', 'dir');
  assert.deepEqual(durability, { appendonly: 'yes', appendfsync: 'always' });
  assert.notEqual(dir, (await configOf(plain, 'dir')).dir);

  assert.equal(await redisCommand(durable.port, ['SET', 'durable-key', 'v1']), 'OK');
  const files = readdirSync(dir as string, { recursive: true, encoding: 'utf8' });
  const logged = files.filter((f) => f.endsWith('.aof')).map((f) => readFileSync(join(dir as string, f), 'utf8'));
  assert.ok(
    logged.some((text) => text.includes('durable-key')),
    `no append-only file in ${dir} holds the write: ${files}`,
  );
  await durable.stop();
  assert.equal(existsSync(dir as string), false);
});

test('startRedis: an unknown fsync policy is refused before any server starts', async () => {
  await assert.rejects(
    startRedis({ install: false, appendfsync: 'sometimes' as never }),
    (err: unknown) => err instanceof RedisOptionError && err.code === 'ZKQ_REDIS_BAD_OPTION',
  );
});
