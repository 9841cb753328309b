// Public types of the simulator, kept apart so internal modules can import
// them without importing the server.

export type Protocol = 'chat_completions' | 'responses' | 'native_messages' | 'embeddings' | 'images';

export interface SimulatorOptions {
  /** Interface to listen on; default 127.0.0.1. */
  host?: string;
  /** 0 (the default) picks an ephemeral port. */
  port?: number;
  /** Instance names: the first path segment of every route. */
  instances: string[];
}

export type SimulatorEvent = {
  type: 'request' | 'finished' | 'aborted';
  instance: string;
  protocol: Protocol;
  stream: boolean;
  /** performance.now() when the event happened. */
  at: number;
  /** On a `request` event whose body parsed: the body exactly as received (tests inspect what a gateway sent). */
  body?: string;
  /** The traceparent header the request carried, when it carried one. */
  traceparent?: string;
};

export type SimulatorListener = (e: SimulatorEvent) => void;

export interface Simulator {
  /** e.g. http://127.0.0.1:43121 (no trailing slash). */
  readonly url: string;
  readonly port: number;
  /** Subscribes to request lifecycle events; returns the unsubscribe function. */
  on(listener: SimulatorListener): () => void;
  /** Requests received (body read) by one instance, or by all when omitted. */
  requestCount(instance?: string): number;
  close(): Promise<void>;
}
