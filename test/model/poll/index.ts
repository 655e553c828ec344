import fc from 'fast-check';

import { checkPollTrace } from '../properties';
import {
	type PollSetup,
	type Schedule,
	simulate,
	type Step,
	STYLES,
	type Style,
} from './simulation';

/**
 * The Poll Trigger's model simulation: random schedules (fast-check) run against the real core,
 * the model n8n and a model source (simulation.ts), each held to the properties (properties.ts).
 * A failing schedule is shrunk to a minimal one and thrown as its story.
 */

export interface ModelCheckOptions {
	runs: number;
	seed: number;
	/** Replays one schedule: fast-check's path of a counterexample (with its seed). */
	path?: string;
	/** Only this style (sources.ts). */
	style?: Style;
	onProgress?: (done: number) => void;
}

const step: fc.Arbitrary<Step> = fc.oneof(
	{
		arbitrary: fc.record({ do: fc.constant('add' as const), n: fc.integer({ min: 1, max: 3 }) }),
		weight: 3,
	},
	{
		arbitrary: fc.record({
			do: fc.constantFrom('change' as const, 'drop' as const, 'readd' as const, 'reorder' as const),
			i: fc.nat(20),
		}),
		weight: 3,
	},
	{ arbitrary: fc.constant({ do: 'poll' as const }), weight: 5 },
	{
		arbitrary: fc.record({ do: fc.constant('create' as const), n: fc.integer({ min: 1, max: 4 }) }),
		weight: 4,
	},
	{
		arbitrary: fc.record({
			do: fc.constant('finish' as const),
			status: fc.constantFrom('success' as const, 'error' as const),
		}),
		weight: 3,
	},
	{ arbitrary: fc.constant({ do: 'refuse' as const }), weight: 1 },
	{ arbitrary: fc.constant({ do: 'crashAfterSave' as const }), weight: 1 },
	{ arbitrary: fc.constant({ do: 'crash' as const }), weight: 1 },
	{ arbitrary: fc.constant({ do: 'republish' as const }), weight: 1 },
	{ arbitrary: fc.record({ do: fc.constant('startAgain' as const), i: fc.nat(20) }), weight: 1 },
	{ arbitrary: fc.constant({ do: 'prune' as const }), weight: 1 },
	{ arbitrary: fc.constant({ do: 'busyWrite' as const }), weight: 1 },
	{ arbitrary: fc.constant({ do: 'rejectButRun' as const }), weight: 1 },
);

function setupOf(style?: Style): fc.Arbitrary<PollSetup> {
	return fc.record({
		style: style ? fc.constant(style) : fc.constantFrom(...STYLES),
		pageSize: fc.integer({ min: 1, max: 3 }),
		maxPages: fc.integer({ min: 1, max: 3 }),
		tokenTtlMs: fc.constantFrom(0, 0, 30_000),
		nextPage: fc.constantFrom('linkHeader' as const, 'nextUrl' as const, 'cursorToken' as const),
		maxRemembered: fc.constantFrom(0, 0, 2, 4, 8),
		firstPoll: fc.constantFrom('all' as const, 'none' as const),
		initialItems: fc.integer({ min: 0, max: 6 }),
		queueMode: fc.boolean(),
	});
}

export function scheduleOf(style?: Style): fc.Arbitrary<Schedule> {
	return fc.record({ setup: setupOf(style), steps: fc.array(step, { maxLength: 30 }) });
}

/** The failures of one schedule, or none. */
export async function failuresOf(schedule: Schedule): Promise<string[]> {
	return checkPollTrace(await simulate(schedule)).failures;
}

/** The story of a schedule: what happened, then what the properties found. */
export async function storyOf(schedule: Schedule): Promise<string> {
	const trace = await simulate(schedule);
	const { failures } = checkPollTrace(trace);
	return [...trace.story, '', 'found:', ...failures.map((failure) => `- ${failure}`)].join('\n');
}

/**
 * Runs `runs` schedules from `seed`; throws an Error whose message is the shrunk story. Returns how
 * often each declared case came up (properties.ts), summed over the schedules.
 */
export async function checkPollModel(options: ModelCheckOptions): Promise<Record<string, number>> {
	let done = 0;
	const declared: Record<string, number> = {};
	const property = fc.asyncProperty(scheduleOf(options.style), async (schedule) => {
		const verdict = checkPollTrace(await simulate(schedule));
		options.onProgress?.(++done);
		for (const [name, count] of Object.entries(verdict.declared))
			declared[name] = (declared[name] ?? 0) + count;
		return verdict.failures.length === 0;
	});
	const details = await fc.check(property, {
		numRuns: options.runs,
		seed: options.seed,
		...(options.path !== undefined && { path: options.path }),
	});
	if (!details.failed) return declared;
	const [schedule] = details.counterexample ?? [];
	if (!schedule) throw details.errorInstance ?? new Error('the poll model failed');
	throw new Error(
		[
			`Poll Trigger model: a schedule breaks a property (seed ${details.seed}, path "${details.counterexamplePath}"; replay: npm run model -- --model poll --seed ${details.seed} --path ${details.counterexamplePath}${options.style ? ` --style ${options.style}` : ''})`,
			`schedule: ${JSON.stringify(schedule)}`,
			'',
			await storyOf(schedule),
		].join('\n'),
	);
}
