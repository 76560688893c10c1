/** Test helpers for queues: a connection on the shared server and a unique prefix per test. */
import { sharedZooKeeper, uniqueRoot } from '@zkq/testing';

export interface QueueTestEnv {
  connection: { connectionString: string; sessionTimeout: number };
  prefix: string;
}

/** Connection options and a fresh prefix (namespace) for one test. */
export async function queueEnv(t: { name?: string }, sessionTimeout = 4000): Promise<QueueTestEnv> {
  return {
    connection: { connectionString: await sharedZooKeeper(), sessionTimeout },
    prefix: uniqueRoot(t.name ?? 'q').slice(1),
  };
}

/** The same, plus the connection BullMQ's classes on `@zkq/bullmq` take (the prefix as `namespace`). */
export async function bullEnv(t: { name?: string }) {
  const env = await queueEnv(t);
  return { env, connection: { ...env.connection, namespace: env.prefix } };
}
