import { Cron } from 'croner';
import { IANAZone } from 'luxon';

import { CronSchedule, MACROS } from './cron';
import { ConfigError } from '../configError';

/*
 * Differential test of the cron planner against croner (a devDependency, used only here): thousands
 * of random expressions from a seeded generator, in zones with and without DST (30-minute DST,
 * transitions at midnight, +5:45 and +12:45 offsets), from random instants and from instants just
 * before DST changes. Every fire the two disagree on must be explained by one of the named
 * differences below, each a documented rule of ours (docs/durable-schedule-trigger.md, "Cron: tested against croner").
 */

const SEED = 20261130;
/**
 * 3,000 in `npm run test:full` (E2E_FULL); 1,000 in `npm test`, where this CPU-bound test runs beside
 * CI's e2e lanes on two cores (449 s niced there, issue 46). Both exercise every named difference.
 */
const EXPRESSIONS = process.env.E2E_FULL ? 3000 : 1000;
const ZONES_PER_EXPRESSION = 3;
const FIRES_PER_START = 8;
const FROM = Date.UTC(2024, 0, 1);
const TO = Date.UTC(2031, 0, 1);
const ZONES = [
	'UTC',
	'Europe/Berlin',
	'Europe/London',
	'America/New_York',
	'America/Santiago',
	'America/Havana',
	'America/St_Johns',
	'Australia/Lord_Howe',
	'Australia/Sydney',
	'Pacific/Chatham',
	'Asia/Kolkata',
	'Asia/Kathmandu',
	'Asia/Beirut',
	'Africa/Cairo',
	'Antarctica/Troll',
	'Pacific/Auckland',
];

/** mulberry32: a small seeded PRNG, so every run compares the same expressions. */
function prng(seed: number): () => number {
	let state = seed >>> 0;
	return () => {
		state = (state + 0x6d2b79f5) >>> 0;
		let t = state;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

const MONTH_NAMES = [
	'JAN',
	'FEB',
	'MAR',
	'APR',
	'MAY',
	'JUN',
	'JUL',
	'AUG',
	'SEP',
	'OCT',
	'NOV',
	'DEC',
];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const MACRO_NAMES = Object.keys(MACROS);

class ExpressionGenerator {
	constructor(private readonly random: () => number) {}

	int(min: number, max: number): number {
		return min + Math.floor(this.random() * (max - min + 1));
	}

	pick<T>(values: readonly T[]): T {
		return values[Math.floor(this.random() * values.length)];
	}

	/** One field: `*`, a value, a range, a step over `*`, a range or a start, or a list of those. */
	field(
		min: number,
		max: number,
		names?: readonly string[],
		nameBase = min,
		bias?: readonly number[],
	): string {
		const value = () => {
			const v = bias && this.random() < 0.5 ? this.pick(bias) : this.int(min, max);
			return names && this.random() < 0.4 && v - nameBase < names.length
				? names[v - nameBase]
				: String(v);
		};
		const item = (): string => {
			const roll = this.random();
			if (roll < 0.35) return value();
			if (roll < 0.55) {
				const a = this.int(min, max);
				const b = this.int(a, max);
				return this.random() < 0.3 && b > a
					? `${a}-${b}/${this.int(1, Math.max(1, b - a))}`
					: `${a}-${b}`;
			}
			if (roll < 0.75) return `*/${this.int(1, Math.max(1, Math.ceil((max - min) / 2)))}`;
			return `${this.int(min, max)}/${this.int(1, Math.max(1, max - min))}`;
		};
		const roll = this.random();
		if (roll < 0.3) return '*';
		if (roll < 0.8) return item();
		return Array.from({ length: this.int(2, 3) }, item).join(',');
	}

	expression(): string {
		if (this.random() < 0.04) return this.pick(MACRO_NAMES);
		// Hours and minutes lean towards the times DST changes happen at (00:00-03:00, :00, :30, :45).
		const minute = this.field(0, 59, undefined, 0, [0, 0, 30, 45, 59, 15]);
		const hour = this.field(0, 23, undefined, 0, [0, 1, 2, 3, 23]);
		const dayOfMonth = this.random() < 0.6 ? '*' : this.field(1, 31);
		const month = this.random() < 0.6 ? '*' : this.field(1, 12, MONTH_NAMES, 1, [3, 4, 9, 10, 11]);
		const dayOfWeek = this.random() < 0.6 ? '*' : this.field(0, 7, DAY_NAMES, 0);
		const five = `${minute} ${hour} ${dayOfMonth} ${month} ${dayOfWeek}`;
		if (this.random() < 0.5) return five;
		// Seconds: steps of at least 10 and sparse lists, so most pass the 10 s minimum.
		const second = this.pick([
			'0',
			'*/10',
			'*/15',
			'*/20',
			'*/30',
			`${this.int(0, 59)}`,
			`${this.int(0, 9)}/${this.int(10, 30)}`,
			`${this.int(0, 20)},${this.int(30, 45)}`,
		]);
		return `${second} ${five}`;
	}
}

/** The instants in [FROM, TO) at which the zone's UTC offset changes (probed every 6 hours). */
function offsetChanges(zoneName: string): Array<{ at: number; deltaMs: number }> {
	const zone = IANAZone.create(zoneName);
	const changes: Array<{ at: number; deltaMs: number }> = [];
	const step = 6 * 3_600_000;
	for (let t = FROM; t < TO; t += step) {
		const before = zone.offset(t);
		const after = zone.offset(t + step);
		if (before === after) continue;
		let [lo, hi] = [t, t + step];
		while (hi - lo > 1) {
			const mid = Math.floor((lo + hi) / 2);
			if (zone.offset(mid) === before) lo = mid;
			else hi = mid;
		}
		changes.push({ at: hi, deltaMs: (after - before) * 60_000 });
	}
	return changes;
}

interface Comparison {
	expression: string;
	zone: string;
	start: number;
	ours: number[];
	croner: number[];
}

/**
 * The documented differences. Each predicate says whether one fire that only one side has is
 * explained by that rule; a difference no rule explains fails the test.
 */
interface NamedDifference {
	name: string;
	rule: string;
	explains(
		fire: number,
		side: 'ours' | 'croner',
		comparison: Comparison,
		changes: Array<{ at: number; deltaMs: number }>,
	): boolean;
}

/** The fields of an expression, macros expanded as both sides define them, always 6 (with seconds). */
function fieldsOf(expression: string): string[] {
	const fields = (MACROS[expression] ?? expression).trim().split(/\s+/);
	return fields.length === 5 ? ['0', ...fields] : fields;
}

/** Our DST rule looks at the hour field alone: "every hour" when it allows all 24 hours, otherwise a fixed-hour job. */
const isFixedHourJob = (expression: string) =>
	new CronSchedule(`0 ${fieldsOf(expression)[2]} * * *`, 'UTC').fingerprint.split(' ')[3] !== '*';
/** croner's default rule (fixedTimeRule "single-value"): a fixed-time job has a single number in each of second, minute and hour. */
const isCronerFixedTimeJob = (expression: string) =>
	fieldsOf(expression)
		.slice(0, 3)
		.every((field) => /^\d+$/.test(field));

const DIFFERENCES: NamedDifference[] = [
	{
		name: 'fixed-hour job, spring forward',
		rule: 'A job whose hour field does not allow all 24 hours is a fixed-hour job, whatever its minute and second fields: its times in a spring-forward gap run once, at the end of the gap. croner calls such a job an interval job unless its second, minute and hour are single values, and skips those times.',
		explains: (fire, side, { expression }, changes) =>
			side === 'ours' &&
			isFixedHourJob(expression) &&
			!isCronerFixedTimeJob(expression) &&
			changes.some((change) => change.deltaMs > 0 && change.at === fire),
	},
	{
		name: 'fixed-hour job, fall back',
		rule: 'A fixed-hour job (as above) runs once in a fall-back repeat, in the first occurrence. croner runs such a job in both occurrences unless its second, minute and hour are single values.',
		explains: (fire, side, { expression }, changes) =>
			side === 'croner' &&
			isFixedHourJob(expression) &&
			!isCronerFixedTimeJob(expression) &&
			changes.some(
				(change) => change.deltaMs < 0 && fire >= change.at && fire < change.at - change.deltaMs,
			),
	},
];

/**
 * Documented rules of ours that croner can be told: each rewrites the expression or sets a croner
 * option so croner plans by our rule. They apply only to expressions with the feature.
 */
interface SyntaxDifference {
	name: string;
	rule: string;
	appliesTo(fields: string[]): boolean;
	variant(fields: string[], options: Record<string, unknown>): void;
}

const DAY_OF_WEEK_START_STEP = /^([^*/-]+)\/(\d+)$/;
const SYNTAX_DIFFERENCES: SyntaxDifference[] = [
	{
		name: 'day-of-week start/step runs to 7',
		rule: "In day-of-week, `a/step` runs from a to 7, the field's maximum (7 is Sunday): `1/3` is Monday, Thursday and Sunday. croner stops at 6 (`1/3` is Monday and Thursday; `7/1` never fires). Told to croner as `a-7/step`.",
		appliesTo: (fields) => fields[5].split(',').some((item) => DAY_OF_WEEK_START_STEP.test(item)),
		variant: (fields) => {
			fields[5] = fields[5]
				.split(',')
				.map((item) => item.replace(DAY_OF_WEEK_START_STEP, '$1-7/$2'))
				.join(',');
		},
	},
	{
		name: 'day field starting with * is unrestricted (Vixie)',
		rule: 'Day-of-month and day-of-week are ORed only when both are restricted, and, as in Vixie cron, a field starting with `*` (`*/2`, `*/1,15`) counts as unrestricted: `0 0 */2 * MON` is odd days that are Mondays. croner ORs any field other than `*`. Told to croner as domAndDow: true.',
		appliesTo: (fields) =>
			fields[3] !== '*' &&
			fields[5] !== '*' &&
			(fields[3].startsWith('*') || fields[5].startsWith('*')),
		variant: (_fields, options) => {
			options.domAndDow = true;
		},
	},
];

/** croner told our syntax rules: every combination of the rules that apply, the plain one first. */
function cronerVariants(expression: string, zone: string): Array<{ names: string[]; cron: Cron }> {
	const applicable = expression.startsWith('@')
		? []
		: SYNTAX_DIFFERENCES.filter((d) => d.appliesTo(fieldsOf(expression)));
	const variants: Array<{ names: string[]; cron: Cron }> = [];
	for (let mask = 0; mask < 1 << applicable.length; mask++) {
		const chosen = applicable.filter((_, i) => mask & (1 << i));
		const fields = expression.startsWith('@') ? [] : fieldsOf(expression);
		const options: Record<string, unknown> = { timezone: zone, paused: true, sloppyRanges: true };
		for (const difference of chosen) difference.variant(fields, options);
		variants.push({
			names: chosen.map((d) => d.name),
			cron: new Cron(chosen.length ? fields.join(' ') : expression, options),
		});
	}
	return variants;
}

function oursFires(schedule: CronSchedule, start: number, count: number): number[] {
	const out: number[] = [];
	for (const fire of schedule.firesAfter(start)) {
		out.push(fire);
		if (out.length === count) break;
	}
	return out;
}

describe('cron planner vs croner (differential)', () => {
	it(`agrees with croner on ${EXPRESSIONS} seeded random expressions in ${ZONES.length} zones, up to the documented differences`, () => {
		const random = prng(SEED);
		const generator = new ExpressionGenerator(random);
		const changesByZone = new Map(ZONES.map((zone) => [zone, offsetChanges(zone)]));
		const counts = {
			expressions: 0,
			pairs: 0,
			starts: 0,
			firesCompared: 0,
			refusedByMinimum: 0,
			neverFires: 0,
		};
		const zonesSeen = new Set<string>();
		const explained = new Map<string, number>(
			[...SYNTAX_DIFFERENCES, ...DIFFERENCES].map((d) => [d.name, 0]),
		);
		const unexplained: string[] = [];

		for (let i = 0; i < EXPRESSIONS; i++) {
			const expression = generator.expression();
			counts.expressions++;
			for (let z = 0; z < ZONES_PER_EXPRESSION; z++) {
				const zone = generator.pick(ZONES);
				let ours: CronSchedule | undefined;
				try {
					ours = new CronSchedule(expression, zone);
				} catch (error) {
					if (!(error instanceof ConfigError)) throw error;
					if (error.message.includes('at least 10 seconds apart')) {
						counts.refusedByMinimum++;
						continue;
					}
					if (error.message.includes('never fires')) {
						// croner agrees when it finds no run either.
						if (
							cronerVariants(expression, zone).every(
								({ cron }) => cron.nextRun(new Date(FROM)) !== null,
							)
						)
							unexplained.push(`${expression} in ${zone}: ours never fires, croner does`);
						counts.neverFires++;
						continue;
					}
					throw error;
				}
				const variants = cronerVariants(expression, zone);
				counts.pairs++;
				zonesSeen.add(zone);
				const changes = changesByZone.get(zone) ?? [];
				const starts = [
					FROM + Math.floor(random() * (TO - FROM)),
					FROM + Math.floor(random() * (TO - FROM)),
				];
				for (let k = 0; k < 2 && changes.length; k++)
					starts.push(generator.pick(changes).at - Math.floor(random() * 6 * 3_600_000));
				for (const start of starts) {
					counts.starts++;
					const oursList = oursFires(ours, start, FIRES_PER_START);
					let verdict: { names: string[]; unexplained: string[] } | undefined;
					for (const { names, cron } of variants) {
						const comparison: Comparison = {
							expression,
							zone,
							start,
							ours: oursList,
							croner: cron.nextRuns(FIRES_PER_START, new Date(start)).map((date) => date.getTime()),
						};
						// Compare the fires both lists cover: up to the earlier of the two last fires.
						const horizon = Math.min(
							oursList[oursList.length - 1],
							comparison.croner[comparison.croner.length - 1] ?? Infinity,
						);
						const oursSet = new Set(oursList.filter((t) => t <= horizon));
						const cronerSet = new Set(comparison.croner.filter((t) => t <= horizon));
						const differing: Array<[number, 'ours' | 'croner']> = [
							...[...oursSet]
								.filter((t) => !cronerSet.has(t))
								.map((t): [number, 'ours'] => [t, 'ours']),
							...[...cronerSet]
								.filter((t) => !oursSet.has(t))
								.map((t): [number, 'croner'] => [t, 'croner']),
						];
						const attempt = { names: [...names], unexplained: [] as string[] };
						for (const [fire, side] of differing) {
							const difference = DIFFERENCES.find((d) =>
								d.explains(fire, side, comparison, changes),
							);
							if (difference) attempt.names.push(difference.name);
							else
								attempt.unexplained.push(
									`${expression} in ${zone} from ${new Date(start).toISOString()}: only ${side} fires at ${new Date(fire).toISOString()}`,
								);
						}
						// The plain comparison's unexplained fires are reported if no variant explains them.
						verdict ??= attempt;
						if (!attempt.unexplained.length) {
							verdict = attempt;
							break;
						}
					}
					counts.firesCompared += oursList.length;
					if (verdict?.unexplained.length) unexplained.push(verdict.unexplained[0]);
					else
						for (const name of new Set(verdict?.names))
							explained.set(name, (explained.get(name) ?? 0) + 1);
				}
			}
		}

		const report = {
			seed: SEED,
			...counts,
			zones: zonesSeen.size,
			explainedDifferences: Object.fromEntries(explained),
			unexplained: unexplained.length,
		};
		console.log(
			`cron differential vs croner: ${JSON.stringify(report, null, 2)}${unexplained.length ? `\nfirst unexplained:\n${unexplained.slice(0, 60).join('\n')}` : ''}`,
		);
		expect(unexplained.slice(0, 20)).toEqual([]);
		// Every named difference is exercised, so none of them is dead weight hiding nothing.
		for (const [name, count] of explained) expect([name, count > 0]).toEqual([name, true]);
		expect(counts.expressions).toBe(EXPRESSIONS);
		expect(zonesSeen.size).toBe(ZONES.length);
		expect(counts.pairs).toBeGreaterThan(EXPRESSIONS * 2);
	});
});
