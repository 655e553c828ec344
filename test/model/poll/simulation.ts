import { PollActivation, type PollSource } from '../../../core/poll/activation';
import type { FirstPollPolicy } from '../../../core/poll/dedupe';
import { PollExpressions } from '../../../core/poll/expressions';
import { ARMED_RUNS_MAX } from '../../../core/poll/runStage';
import { FakeClock, flushPromises } from '../../support/fakeClock';
import { ModelN8n } from '../n8n';
import type { PollTrace } from '../properties';
import {
	Catalogue,
	type ModelSource,
	newestFirstSource,
	cursorOldestFirstSource,
	filesFolderSource,
	relistSource,
	s3AfterLastKeySource,
	sinceLastPollSource,
	sqlKeysetSource,
	type StyleSettings,
	versionKey,
} from './sources';

/** The styles of source the simulation polls (sources.ts). */
export const STYLES = [
	'relist',
	'sinceLastPoll',
	'cursorOldestFirst',
	'newestFirstPages',
	'sqlKeyset',
	's3AfterLastKey',
	'filesFolder',
] as const;
export type Style = (typeof STYLES)[number];

/** What one schedule is polled with. */
export interface PollSetup extends StyleSettings {
	style: Style;
	/** Remember at Most (Keys); 0: no cap. */
	maxRemembered: number;
	firstPoll: FirstPollPolicy['mode'];
	/** Items in the source before the first activation. */
	initialItems: number;
	/** Queue mode: n8n may report a run not created that a worker runs anyway. */
	queueMode: boolean;
}

/** One step of a schedule; `i` picks an item (mod the count). */
export type Step =
	| { do: 'add'; n: number }
	| { do: 'change' | 'drop' | 'readd' | 'reorder'; i: number }
	| { do: 'poll' }
	| { do: 'create'; n: number }
	| { do: 'crashAfterSave' }
	| { do: 'refuse' }
	| { do: 'rejectButRun' }
	| { do: 'finish'; status: 'success' | 'error' }
	| { do: 'busyWrite' }
	| { do: 'crash' }
	| { do: 'republish' }
	| { do: 'startAgain'; i: number }
	| { do: 'prune' };

export interface Schedule {
	setup: PollSetup;
	steps: Step[];
}

const INTERVAL = 60_000;

/**
 * Runs one schedule against the real core (PollActivation) and the model n8n and source, then a
 * quiet end (no faults, no changes: polls, every run created and ended) long enough for every owed
 * item to come back; returns what happened, for the properties (properties.ts), and its story.
 */
export async function simulate(schedule: Schedule): Promise<PollTrace> {
	const { setup } = schedule;
	// One turn after each timer: the model's transports answer in promises alone.
	const clock = new FakeClock(undefined, 1);
	const story: string[] = [];
	const tell = (line: string) => story.push(line);
	const catalogue = new Catalogue(clock);
	let pollNumber = 0;
	const trace: PollTrace = {
		setup,
		listed: catalogue.listed,
		baseline: new Set(),
		starts: [],
		reported: new Set(),
		expiredUnread: false,
		startAgain: [],
		dropped: new Set(),
		readded: new Set(),
		prunedAfterStart: new Set(),
		unpublishedRunning: new Set(),
		rejectedButRan: new Map(),
		final: new Map(),
		polls: [],
		boundViolations: [],
		story,
	};
	const n8n = new ModelN8n({
		started: (key, items) => {
			for (const { id, v } of items) trace.starts.push({ id, v, key: key ?? '', poll: pollNumber });
		},
		reported: (kind, ids) => {
			tell(`  a failed execution reports ${kind}: ${ids.join(',')}`);
			for (const id of ids) trace.reported.add(id);
		},
		said: (line) => tell(`  ${line}`),
		wrote: () => catalogue.wrote(),
		saved: () => catalogue.saved(),
		reverted: () => catalogue.reverted(),
	});
	const settings: StyleSettings = setup;
	const poll = () => pollNumber;
	let requests = 0;
	/** Set while an activation starts: its own first poll. */
	let activating = false;
	const tellListing = (what: string) =>
		tell(`  ${activating ? "the activation's poll" : `poll ${pollNumber}`} ${what}`);
	const model: ModelSource =
		setup.style === 'relist'
			? relistSource(catalogue, poll)
			: setup.style === 'sinceLastPoll'
				? sinceLastPollSource(catalogue, poll)
				: setup.style === 'cursorOldestFirst'
					? cursorOldestFirstSource(catalogue, poll, settings)
					: setup.style === 'newestFirstPages'
						? newestFirstSource(catalogue, poll, clock, settings)
						: setup.style === 'sqlKeyset'
							? sqlKeysetSource(catalogue, poll, clock, settings)
							: setup.style === 's3AfterLastKey'
								? s3AfterLastKeySource(catalogue, poll, clock, settings)
								: filesFolderSource(catalogue, poll, clock, (files) => {
										requests++;
										tellListing(`lists the folder: ${files.join(',') || 'nothing'}`);
									});
	const context = wrapContext(model, () => requests++, tellListing);
	const source = pagesCounted(model.source, (pages) => (requests += pages));
	for (let n = 0; n < setup.initialItems; n++) catalogue.add();
	// Files written an hour before are finished uploading at the first poll.
	await clock.advance(setup.style === 'filesFolder' ? 3_600_000 : 1_000);
	if (setup.initialItems > 0)
		tell(`the source holds ${[...catalogue.items.keys()].join(',')} before the first activation`);

	let startAgainList: string[] = [];
	let pollFailed = false;
	let baselineTaken = setup.firstPoll === 'all';
	const activate = async () => {
		const activation = new PollActivation(
			n8n.stored,
			{
				source,
				dedupe: model.dedupe,
				firstPoll: { mode: setup.firstPoll } as FirstPollPolicy,
				maxRemembered: setup.maxRemembered,
				maxRunsInFlight: ARMED_RUNS_MAX,
				expressions: new PollExpressions(model.expressions),
				oneRunPerItem: true,
				keyPrefix: 'poll:wf:node:',
				clock,
			},
			{ intervalMs: INTERVAL },
		);
		n8n.activated(activation);
		if (!baselineTaken && activation.store.isFresh) markBaseline();
		activating = true;
		await activation.start(
			{
				outlet: n8n.outlet(),
				context,
				onPollFailure: (error) => {
					pollFailed = true;
					tell(`  the poll fails: ${error.message}`);
				},
				onPageLimit: (message) => {
					tell(`  Max Pages reported: ${message}`);
					if (message.includes('no longer knows it')) trace.expiredUnread = true;
				},
				onDeadLetter: (letter) => {
					for (const key of letter.keys) trace.reported.add(String(key));
				},
				onSilence: () => undefined,
				onUnlisted: (message, keys) => {
					tell(`  reported: ${message}`);
					for (const key of keys) trace.reported.add(String(key));
				},
			},
			startAgainList,
		);
		// n8n saves static data at the end of an activation.
		n8n.persist();
		// The activation's first poll (not awaited by start() on a known store) ends before the next
		// step: the model's transports answer in promises alone.
		await flushPromises(1);
		activating = false;
	};
	/** First Poll Starts Nothing: what the source holds when the first poll of a fresh store runs. */
	const markBaseline = () => {
		for (const { id, v } of catalogue.items.values()) trace.baseline.add(versionKey(id, v));
	};
	/** A kill or unpublish: the runs whose settlement n8n has not stored are emitted again. */
	const cutRuns = () => {
		for (const key of n8n.runningKeys()) trace.unpublishedRunning.add(key);
		for (const { key } of n8n.stored.outbox ?? []) trace.unpublishedRunning.add(key);
	};
	const stopActivation = async () => {
		await n8n.activation?.stop();
	};
	const pollOnce = async (quiet: boolean) => {
		pollNumber++;
		const before = requests;
		pollFailed = false;
		const activation = n8n.activation!;
		const fresh = activation.store.isFresh;
		if (fresh && setup.firstPoll === 'none') markBaseline();
		// The runner's tick may come later than one interval (a backoff, a tick skipped after a
		// re-activation): the quiet end waits for a poll, a step of the schedule says none came.
		for (let tries = 0; tries < (quiet ? 3 : 1) && requests === before; tries++) {
			const observed = n8n.states()[1].observed;
			await clock.advance(Math.max(INTERVAL, (observed?.backoffUntil ?? 0) - clock.now() + 1));
		}
		if (requests === before) tell('  no poll was due');
		const latest = n8n.states()[1].observed;
		const failed = pollFailed || (latest?.consecutiveFailures ?? 0) > 0;
		trace.polls.push({
			requests: requests - before,
			failed,
			quiet,
			baseline: fresh && setup.firstPoll === 'none',
		});
		if (!fresh) baselineTaken = true;
	};
	tell(`the workflow is published (${describe(setup)})`);
	await activate();

	const apply = async (step: Step) => {
		switch (step.do) {
			case 'add': {
				await clock.advance(1);
				const ids = Array.from({ length: step.n }, () => catalogue.add());
				tell(`the source gets ${ids.join(',')}`);
				return;
			}
			case 'change':
			case 'reorder':
			case 'drop':
			case 'readd': {
				// afterLastKey never lists a key it has passed: nothing comes back under an old key.
				if (step.do === 'readd' && setup.style === 's3AfterLastKey') return;
				// A write comes after the poll before it began, never in its millisecond.
				await clock.advance(1);
				const id = catalogue[step.do](step.i);
				if (id === undefined) return;
				if (step.do === 'drop') trace.dropped.add(id);
				if (step.do === 'readd' || step.do === 'change') trace.readded.add(id);
				tell(`the source ${pastTense[step.do]} ${id}`);
				return;
			}
			case 'poll':
				tell(`poll ${pollNumber + 1}`);
				await pollOnce(false);
				return;
			case 'create':
				for (let n = 0; n < step.n; n++) if (!n8n.create()) return;
				return;
			case 'refuse':
				n8n.refuse();
				return;
			case 'rejectButRun':
				if (setup.queueMode)
					for (const id of n8n.rejectButRun() ?? [])
						trace.rejectedButRan.set(id, (trace.rejectedButRan.get(id) ?? 0) + 1);
				return;
			case 'finish':
				n8n.finish(step.status);
				return;
			case 'busyWrite':
				if (n8n.busyWrite()) tell('  n8n writes the settlements so far');
				return;
			case 'crashAfterSave':
			case 'crash': {
				if (step.do === 'crashAfterSave') {
					if (n8n.queued === 0) return;
					n8n.persist();
					tell('n8n saves static data for the next run, then is killed before creating it');
				} else tell('n8n is killed');
				cutRuns();
				await stopActivation();
				n8n.crash();
				await clock.advance(5_000);
				await activate();
				tell('n8n restarts: the workflow activates again');
				return;
			}
			case 'republish':
			case 'startAgain': {
				if (step.do === 'startAgain') {
					const item = catalogue.pick(step.i);
					// Not covered for $cursor: its Start Again names cursor values, which it never lists again.
					if (!item || setup.style === 'cursorOldestFirst') return;
					// Start Again is applied once per list (docs/poll-trigger.md): the same list again is a
					// re-publish, which starts nothing more.
					if (startAgainList.join() !== item.id)
						trace.startAgain.push({ id: item.id, atStart: trace.starts.length });
					startAgainList = [item.id];
					tell(`the user sets Start Again to ${item.id} and publishes`);
				} else tell('the user unpublishes and publishes');
				cutRuns();
				await stopActivation();
				n8n.unpublish();
				await activate();
				return;
			}
			case 'prune': {
				const pruned = n8n.prune();
				if (pruned === 0) return;
				for (const start of trace.starts)
					if (!n8n.executions.has(start.key)) trace.prunedAfterStart.add(start.id);
				tell(`n8n prunes ${pruned} ended execution(s)`);
				return;
			}
		}
	};

	for (const step of schedule.steps) {
		await apply(step);
		checkBounds(n8n, setup, trace, catalogue);
	}
	// The quiet end: enough polls for every item owed to be paged to (Max Pages a poll), each
	// followed by every run created and ended.
	tell('from here on nothing fails and the source holds still:');
	const pages = Math.ceil(catalogue.items.size / Math.max(1, setup.pageSize)) + 1;
	const quietPolls = 4 + 2 * Math.ceil(pages / Math.max(1, setup.maxPages));
	for (let n = 0; n < quietPolls; n++) {
		await pollOnce(true);
		await drain(n8n);
		checkBounds(n8n, setup, trace, catalogue);
	}
	await stopActivation();
	for (const { id, v } of catalogue.items.values()) trace.final.set(id, v);
	return trace;
}

const pastTense = { change: 'changes', drop: 'drops', readd: 'adds back', reorder: 'reorders' };

/** Every run created and ended, until n8n holds nothing. */
async function drain(n8n: ModelN8n): Promise<void> {
	for (let guard = 0; guard < 10_000; guard++) {
		if (!n8n.create() && !n8n.finish('success')) {
			await Promise.resolve();
			if (n8n.idle) return;
		}
	}
	throw new Error('the quiet end did not settle');
}

/**
 * sql.query's requests are its pages (`pages`, at most maxRows' worth: Max Pages in the model), not
 * the one-row query that finds where a zone ends whose last row changed (sql.ts firstRowAfter).
 */
function pagesCounted(source: PollSource, count: (pages: number) => void): PollSource {
	if (source.op.transport !== 'sql') return source;
	const { op } = source;
	return {
		...source,
		op: {
			...op,
			run: async (args, context) => {
				const result = await op.run(args, context);
				if (result.kind === 'data') count((result.data as { pages: number }).pages);
				return result;
			},
		},
	};
}

/** The source's transports, counting requests (HTTP: each; SQL: pagesCounted) and telling what each listed. */
function wrapContext(
	model: ModelSource,
	counted: () => void,
	tell: (what: string) => void,
): ModelSource['context'] {
	const { http, sql } = model.context;
	return {
		...model.context,
		...(http && {
			http: async (request) => {
				counted();
				const response = await http(request);
				const params = new URLSearchParams({
					...Object.fromEntries(new URL(request.url).searchParams),
					...request.query,
				});
				const page = params.get('page') ?? params.get('cursor')?.split('~')[0];
				const after = params.get('continuation-token') ?? params.get('start-after');
				if (params.has('list-type')) {
					const keys = [...response.body.matchAll(/<Key>([^<]*)<\/Key>/g)].map(([, key]) => key);
					tell(`lists after "${after ?? ''}": ${keys.join(',') || 'nothing'}`);
					return response;
				}
				tell(
					`asks ${page ? `page ${page}` : 'the list'}: ${response.status === 200 ? `lists ${listedIds(response.body)}` : `answers ${response.status}`}`,
				);
				return response;
			},
		}),
		...(sql && {
			sql: async (options) => {
				const session = await sql(options);
				return {
					...session,
					query: async (text, params) => {
						const rows = await session.query(text, params);
						tell(
							`reads after (${String(params[0]).slice(11, 19)}, ${JSON.stringify(params[1])}): ${rows.map((row) => `${String(row.id)}@${String(row.v)}`).join(',') || 'nothing'}`,
						);
						return rows;
					},
				};
			},
		}),
	};
}

function listedIds(body: string): string {
	const items = (JSON.parse(body) as { items: Array<{ id: string; v: number }> }).items;
	return items.map(({ id, v }) => `${id}@${v}`).join(',') || 'nothing';
}

function describe(setup: PollSetup): string {
	return [
		setup.style,
		`pages of ${setup.pageSize}`,
		`Max Pages ${setup.maxPages}`,
		`Remember at Most ${setup.maxRemembered || 'off'}`,
		`First Poll Starts ${setup.firstPoll === 'all' ? 'All' : 'Nothing'}`,
		...(setup.style === 'newestFirstPages' ? [`next page by ${setup.nextPage}`] : []),
		...(setup.tokenTtlMs > 0
			? [`next-page requests expire after ${setup.tokenTtlMs / 1000} s`]
			: []),
		...(setup.queueMode ? ['queue mode'] : []),
	].join(', ');
}

/**
 * The state's bounds, after every step (properties.ts, 5): Remember at Most keeps at most its cap,
 * and beyond it only keys the polls of the latest pass over the source listed ("the cap never
 * forgets what the source is known to list"); the stored outbox holds at most one run per item
 * version listed and per Start Again.
 */
function checkBounds(
	n8n: ModelN8n,
	setup: PollSetup,
	trace: PollTrace,
	catalogue: Catalogue,
): void {
	const activation = n8n.activation;
	if (!activation) return;
	if (setup.maxRemembered > 0) {
		const size = activation.store.size;
		// A pass over the source: one poll, and a poll before and after it that read again only for
		// the items owed (neither ends a pass: the cap applies at the pass's end) or listed files
		// still uploading, or a newest-first list read over polls of Max Pages.
		const polls =
			3 +
			(setup.style === 'newestFirstPages'
				? Math.ceil(catalogue.items.size / (setup.pageSize * setup.maxPages))
				: 0);
		const listed = catalogue.listedByLatest(polls).size;
		if (size > setup.maxRemembered + listed)
			trace.boundViolations.push(
				`the history holds ${size} keys, over Remember at Most ${setup.maxRemembered} and the ${listed} the latest ${polls} polls listed`,
			);
	}
	for (const state of n8n.states()) {
		const outbox = state.outbox?.length ?? 0;
		const bound = trace.listed.size + trace.startAgain.length;
		if (outbox > bound)
			trace.boundViolations.push(`the stored outbox holds ${outbox} runs, over ${bound}`);
	}
}
