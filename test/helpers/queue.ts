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
