/**
 * ThreadPool: runs a file processor on a piscina pool of worker threads.
 */

import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BroadcastChannel } from 'node:worker_threads';
import type { JobJson } from '@zkq/core';
import { Piscina } from 'piscina';
import type { ThreadMessage, ThreadResult } from './protocol.js';

// Source checkouts run TypeScript directly; published builds run the compiled file.
const THREAD_ENTRY = new URL(`./thread-main${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

/** Error thrown by a processor inside a thread, rebuilt on the main thread. */
export class ProcessorThreadError extends Error {
  constructor(result: Extract<ThreadResult, { ok: false }>) {
    super(result.message);
    this.name = result.name;
    if (result.stack) this.stack = result.stack;
  }
}

export class ThreadPool {
  private readonly pool: Piscina;
  private readonly channel: BroadcastChannel;
  private readonly channelName = `zkq-${randomBytes(6).toString('hex')}`;
  readonly processorUrl: string;

  constructor(processor: string | URL, threads: number | undefined, onMessage: (m: ThreadMessage) => void) {
    this.processorUrl =
      processor instanceof URL
        ? processor.href
        : /^[a-z]+:\/\//i.test(processor)
          ? processor
          : pathToFileURL(processor).href;
    const max = threads ?? Math.max(1, availableParallelism());
    this.pool = new Piscina({
      filename: fileURLToPath(THREAD_ENTRY),
      minThreads: 1,
      maxThreads: max,
      idleTimeout: 30_000,
    });
    this.channel = new BroadcastChannel(this.channelName);
    this.channel.unref();
    this.channel.onmessage = (e) => onMessage((e as { data: ThreadMessage }).data);
  }

  /**
   * Runs one job; resolves with the processor's result, rejects with its
   * error. `report` receives the attempt's final progress and log lines first.
   */
  async run(
    job: JobJson,
    token: string,
    signal: AbortSignal,
    report: (progress: unknown, logs: string[]) => void,
  ): Promise<unknown> {
    const result = (await this.pool.run(
      { processor: this.processorUrl, job, token, channel: this.channelName },
      { signal },
    )) as ThreadResult;
    report(result.progress, result.logs);
    if (result.ok) return result.value;
    throw new ProcessorThreadError(result);
  }

  get threads(): number {
    return this.pool.threads.length;
  }

  async close(): Promise<void> {
    this.channel.close();
    await this.pool.destroy();
  }
}
