import {
	type IDataObject,
	type INode,
	type INodeExecutionData,
	type ITriggerFunctions,
	type ITriggerResponse,
	type NodeOperationError,
} from 'n8n-workflow';

import type { RunOutlet, RunToEmit } from '../../core/outbox';
import { emittedInFlight, RunEmitter, type RunEmitterOptions } from './emitRuns';
import { inEditorWords, nodeError, saveTriggerFailure, toNodeError } from './errors';
import { type LiveCopiesWriter, writerToLiveCopies } from './liveCopies';
import { announceMissing, type N8nCapabilities } from './n8nDoor';

/** What a trigger hands its DurableTrigger: its engine, as n8n's side drives it. */
export interface TriggerEngine<R> {
	/** How its runs become items, and what it is told of them as n8n settles them (emitRuns.ts). */
	runs: RunEmitterOptions<R>;
	/** Execute step (manual mode): the items shown; it starts and stores nothing. */
	preview(): Promise<INodeExecutionData[]>;
	/** Goes live (catch-up, the first poll), emitting through the DurableTrigger. */
	start(): Promise<void>;
	/** n8n closed the trigger: no more timers; resolves once the work under way is done. */
	stop(): void | Promise<void>;
}

/**
 * Activations refused in this process, by workflow and node: the message last reported. n8n 2.x
 * answers a publish with 200 and shows a refused activation only in its log and the publication
 * status, after retrying it: so a refusal is reported by one failed execution (the error workflow
 * runs), once per message however often n8n retries, and forgotten when an activation succeeds.
 */
const refusals = new Map<string, string>();

/**
 * n8n's side of one activation of a durable trigger, the same for the Poll Trigger and the Durable
 * Schedule Trigger: the node's state in static data (in every live copy of it, liveCopies.ts), the
 * run emitter and the settlements it reports (emitRuns.ts), the close, failures (failed executions,
 * errors.ts) and log lines named for the node. A node reads its parameters, builds its engine on
 * `saved` with this as its outlet (RunOutlet), and hands it to `activate`.
 */
export class DurableTrigger<R> implements RunOutlet<object, R> {
	readonly node: INode;
	/** The workflow's id; undefined for a workflow never saved. */
	readonly workflowId: string | undefined;
	/** False for Execute step (manual mode), which only previews. */
	readonly live: boolean;
	private readonly nodeData: IDataObject;
	/** Live, once the activation can no longer be refused (writerToLiveCopies says why). */
	private liveCopies: LiveCopiesWriter | undefined;
	private emitter: RunEmitter<R> | undefined;
	/** What this n8n offers the trigger (n8nDoor.ts), probed as it goes live. */
	private n8n: N8nCapabilities | undefined;

	/** `stateKey`: the node's key in its static data; `title`: the node's kind, as logs name it. */
	constructor(
		private readonly context: ITriggerFunctions,
		private readonly stateKey: string,
		private readonly title: string,
	) {
		this.node = context.getNode();
		this.workflowId = context.getWorkflow().id;
		this.live = context.getMode() !== 'manual';
		this.nodeData = context.getWorkflowStaticData('node');
	}

	/** The state in the node's static data, with its format version; undefined before any write. */
	get saved(): unknown {
		return this.nodeData[this.stateKey];
	}

	/**
	 * Builds the engine with `build`, which reads and checks the settings: a throw refuses the
	 * activation, naming the field, with nothing written. Execute step then previews. Live: what this
	 * n8n lacks is said once, the live copies are registered, the emitter made and the engine
	 * started; a throw there closes it all again and refuses the activation.
	 */
	async activate(build: () => Promise<TriggerEngine<R>>): Promise<ITriggerResponse> {
		let engine: TriggerEngine<R>;
		try {
			engine = await build();
		} catch (error) {
			throw this.refused(error);
		}
		const closeFunction = async () => {
			this.liveCopies?.close();
			this.emitter?.stop();
			await engine.stop();
		};
		if (!this.live)
			return {
				closeFunction,
				manualTriggerFunction: async () => this.context.emit([await engine.preview()]),
			};
		this.n8n = announceMissing(this.context, 'trigger');
		// Into every live copy of the node's static data: another trigger of the workflow, re-registered
		// on its own copy, must not store an old state of this one with its emits.
		this.liveCopies = writerToLiveCopies(this.context);
		this.emitter = new RunEmitter<R>(this.context, engine.runs);
		try {
			await engine.start();
		} catch (error) {
			await closeFunction();
			throw this.refused(error);
		}
		refusals.delete(this.refusalKey);
		return { closeFunction };
	}

	/** A refused activation's error; live, reported by a failed execution once per message (refusals). */
	private refused(error: unknown): NodeOperationError {
		const refusal = toNodeError(this.node, error);
		if (this.live && refusals.get(this.refusalKey) !== refusal.message) {
			refusals.set(this.refusalKey, refusal.message);
			saveTriggerFailure(
				this.context,
				nodeError(this.node, `Not activated: ${refusal.message}`, {
					description: `${refusal.description ? `${refusal.description} ` : ''}n8n keeps the workflow published and retries the activation; this is reported once, until an activation succeeds.`,
				}),
			);
		}
		return refusal;
	}

	private get refusalKey(): string {
		return `${this.workflowId}:${this.node.id}`;
	}

	/**
	 * Reassigns the whole state (n8n notices only a reassigned top-level key); n8n stores it with the
	 * next emit or after activation.
	 */
	write(state: object): void {
		if (this.liveCopies) this.liveCopies.write(this.stateKey, state as IDataObject);
		else this.nodeData[this.stateKey] = state as IDataObject;
	}

	async emit(runs: ReadonlyArray<RunToEmit<R>>): Promise<void> {
		await this.running.emit(runs);
	}

	async emitTaken(take: () => ReadonlyArray<RunToEmit<R>>): Promise<void> {
		await this.running.emitTaken(take);
	}

	inFlight(key: string): boolean {
		return emittedInFlight(key);
	}

	writeNow(): void {
		this.running.write();
	}

	storeNow(): void {
		if (this.n8n?.deduplicationKeys) this.running.write();
	}

	info(message: string): void {
		this.context.logger.info(this.named(message));
	}

	warn(message: string): void {
		this.context.logger.warn(this.named(message));
	}

	/** A failure no caller can be told of: a failed execution where n8n offers one (errors.ts). */
	fail(error: unknown): void {
		saveTriggerFailure(this.context, toNodeError(this.node, error));
	}

	/** `<title> "<node name>": message`, the fields it names as the editor labels them. */
	named(message: string): string {
		return `${this.title} "${this.node.name}": ${inEditorWords(message, this.node)}`;
	}

	private get running(): RunEmitter<R> {
		if (!this.emitter) throw new Error(this.named('runs are emitted only once it is live'));
		return this.emitter;
	}
}
