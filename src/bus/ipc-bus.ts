// Change bus over cluster IPC: a worker's publish goes to the primary, which
// hands it to every worker (and to its own subscribers).
import type { PrimaryChannel, WorkerChannel } from '../cluster/ipc.js';
import { Subscribers, type ChangeBus, type ChangeHandler, type Topic } from './bus.js';

interface BusMessage {
  topic: Topic;
  payload: string;
}

export class WorkerIpcBus implements ChangeBus {
  private readonly subs = new Subscribers();

  constructor(private readonly channel: WorkerChannel) {
    channel.on('bus:deliver', (m: BusMessage) => this.subs.deliver(m.topic, m.payload));
  }

  async publish(topic: Topic, payload: string): Promise<void> {
    this.channel.send('bus:publish', { topic, payload });
  }

  subscribe(topic: Topic, handler: ChangeHandler): void {
    this.subs.add(topic, handler);
  }

  async close(): Promise<void> {}
}

export class PrimaryIpcBus implements ChangeBus {
  private readonly subs = new Subscribers();

  constructor(private readonly channel: PrimaryChannel) {
    channel.on('bus:publish', (m: BusMessage) => this.fanOut(m));
  }

  private fanOut(m: BusMessage): void {
    this.subs.deliver(m.topic, m.payload);
    this.channel.broadcast('bus:deliver', m);
  }

  async publish(topic: Topic, payload: string): Promise<void> {
    this.fanOut({ topic, payload });
  }

  subscribe(topic: Topic, handler: ChangeHandler): void {
    this.subs.add(topic, handler);
  }

  async close(): Promise<void> {}
}
