import { createHash } from 'node:crypto';
import jsonata from 'jsonata';

import { ConfigError, fieldRef, showValue } from '../configError';
import { PollItemError } from './errors';

/** The user's JSONata, as typed in the node. */
export interface PollExpressionSources {
	/** Selects the list in the op's result; unset means the result is the list. */
	items?: string;
	/** The key of one item. */
	id: string;
	/** What changes when the item changes (dedupe `changed`); unset means the item's whole content. */
	version?: string;
}

/** An item's key: a non-empty string or a finite number. */
export type ItemKey = string | number;

/** One item of a poll with what dedupe needs to know about it. */
export interface KeyedItem<T = unknown> {
	item: T;
	key: ItemKey;
	/** Position in the op's list (0-based), for messages and list-order dedupe. */
	index: number;
	/** A token that differs when the item's version differs; present when asked for. */
	version?: string;
}

type ExpressionField = 'items' | 'id' | 'version';

function expressionError(field: ExpressionField, source: string, problem: string): ConfigError {
	return new ConfigError(field, source, problem);
}

/** One compiled expression, with a direct reader when it is a plain field path. */
class CompiledExpression {
	private readonly expression: jsonata.Expression;
	/** Field names of a plain path such as `meta.id`, read without JSONata. */
	private readonly fieldPath: string[] | undefined;
	/** Field names of a path of names, with or without filters (`data.items[open]`): what must exist. */
	readonly namePath: string[] | undefined;

	constructor(
		readonly field: ExpressionField,
		readonly source: string,
	) {
		try {
			this.expression = jsonata(source);
		} catch (error) {
			const position = typeof error?.position === 'number' ? ` at position ${error.position}` : '';
			throw expressionError(
				field,
				source,
				`not valid JSONata: ${error?.message ?? error}${position}`,
			);
		}
		this.fieldPath = plainFieldPath(this.expression.ast());
		this.namePath = namePath(this.expression.ast());
	}

	/**
	 * The expression's value for `input`: synchronously for a plain field path whose walk meets only
	 * objects and ends on a primitive, else a promise from JSONata. Why the fast path: JSONata 2
	 * evaluates asynchronously, at several microseconds an item, which dominates a 10,000-item poll;
	 * the direct read has JSONata's semantics (own properties only, a missing field is undefined), and
	 * anything it would have to imitate (arrays that JSONata maps over, objects) goes to JSONata.
	 */
	read(input: unknown): unknown {
		if (this.fieldPath) {
			let value = input;
			for (const name of this.fieldPath) {
				if (Array.isArray(value)) return this.evaluate(input);
				if (
					value === null ||
					typeof value !== 'object' ||
					!Object.prototype.hasOwnProperty.call(value, name)
				)
					return undefined;
				value = (value as Record<string, unknown>)[name];
			}
			if (value === null || typeof value !== 'object') return value;
		}
		return this.evaluate(input);
	}

	private evaluate(input: unknown): Promise<unknown> {
		return this.expression.evaluate(input);
	}
}

/** The field names of a path made only of plain names (`id`, `meta.id`, `` `first name` ``), else undefined. */
function plainFieldPath(ast: jsonata.ExprNode): string[] | undefined {
	// The typings omit 'path', the node type JSONata gives every field path.
	if ((ast.type as string) !== 'path' || !ast.steps?.length) return undefined;
	const names: string[] = [];
	for (const step of ast.steps) {
		// Any key besides these means a filter, group, index binding or similar that changes the result.
		const plain =
			step.type === 'name' &&
			typeof step.value === 'string' &&
			Object.keys(step).every((key) => key === 'type' || key === 'value' || key === 'position');
		if (!plain) return undefined;
		names.push(step.value as string);
	}
	return names;
}

/** The field names of a path whose every step is a name (filters allowed), else undefined. */
function namePath(ast: jsonata.ExprNode): string[] | undefined {
	if ((ast.type as string) !== 'path' || !ast.steps?.length) return undefined;
	if (!ast.steps.every((step) => step.type === 'name' && typeof step.value === 'string'))
		return undefined;
	return ast.steps.map((step) => step.value as string);
}

/**
 * Where a path of names leaves `value`: the first name no object along the way has, with the fields
 * that are there; undefined when every name exists somewhere (an empty list is not a missing field).
 */
function missingField(
	path: readonly string[],
	value: unknown,
): { name: string; at: string; fields: string[] } | undefined {
	let level: unknown[] = [value];
	for (let step = 0; step < path.length; step++) {
		const objects = level
			.flat()
			.filter(
				(v): v is Record<string, unknown> =>
					v !== null && typeof v === 'object' && !Array.isArray(v),
			);
		if (objects.length === 0) return undefined;
		const holders = objects.filter((object) =>
			Object.prototype.hasOwnProperty.call(object, path[step]),
		);
		if (holders.length === 0) {
			const fields = [...new Set(objects.flatMap((object) => Object.keys(object)))];
			return {
				name: path[step],
				at: step === 0 ? "the op's result" : `"${path.slice(0, step).join('.')}"`,
				fields,
			};
		}
		level = holders.map((holder) => holder[path[step]]);
	}
	return undefined;
}

/** The user's expressions, compiled once per activation. */
export class PollExpressions {
	private readonly items: CompiledExpression | undefined;
	private readonly id: CompiledExpression;
	private readonly version: CompiledExpression | undefined;

	constructor(sources: PollExpressionSources) {
		const trimmed = (source: string | undefined) => (source?.trim() ? source.trim() : undefined);
		const id = trimmed(sources.id);
		if (!id)
			throw expressionError(
				'id',
				sources.id,
				'set it to the expression that gives one item\'s key, for example "id"',
			);
		const items = trimmed(sources.items);
		const version = trimmed(sources.version);
		this.items = items === undefined ? undefined : new CompiledExpression('items', items);
		this.id = new CompiledExpression('id', id);
		this.version = version === undefined ? undefined : new CompiledExpression('version', version);
	}

	/** The list of items in the op's result. */
	async selectItems(result: unknown): Promise<unknown[]> {
		if (!this.items) {
			if (Array.isArray(result)) return result;
			throw expressionError(
				'items',
				'',
				`the op returned ${describeShape(result)}, not a list; set "${fieldRef('items')}" to select the list in it (for example "data" or "results")`,
			);
		}
		const selected = await this.read(this.items, result);
		if (selected === undefined) {
			// Nothing selected: fine when the list is empty or filtered out, an error when a field the
			// path names is not there at all, so a typo never looks like an empty source.
			const missing = this.items.namePath && missingField(this.items.namePath, result);
			if (missing) {
				const shown =
					missing.fields.slice(0, 10).join(', ') + (missing.fields.length > 10 ? ', …' : '');
				throw expressionError(
					'items',
					this.items.source,
					`it names the field "${missing.name}", which ${missing.at} does not have; its fields are: ${shown || 'none'}`,
				);
			}
			return [];
		}
		// JSONata gives a lone value, not a one-item list, when exactly one thing matches.
		return Array.isArray(selected) ? selected : [selected];
	}

	/** The key of the item at `index`. */
	async keyOf(item: unknown, index: number): Promise<ItemKey> {
		return checkedKey(await this.read(this.id, item, index), index);
	}

	/** A token that differs when the item's version (or, without `version`, its content) differs. */
	async versionOf(item: unknown, index: number): Promise<string> {
		if (!this.version) return contentHash(item);
		return checkedVersion(await this.read(this.version, item, index), index);
	}

	/** Selects the items in `result` and keys each one; versions only when asked, as content hashes cost. */
	async keyItems<T = unknown>(
		result: unknown,
		options: { withVersion: boolean },
	): Promise<Array<KeyedItem<T>>> {
		return this.keyList((await this.selectItems(result)) as T[], options);
	}

	/** Keys each item of a list already selected (the pages of a paginated poll). */
	async keyList<T = unknown>(
		items: readonly T[],
		options: { withVersion: boolean },
	): Promise<Array<KeyedItem<T>>> {
		const keyed: Array<KeyedItem<T>> = new Array(items.length);
		for (let index = 0; index < items.length; index++) {
			const item = items[index];
			const key = await this.keyOf(item, index);
			keyed[index] = options.withVersion
				? { item, key, index, version: await this.versionOf(item, index) }
				: { item, key, index };
		}
		return keyed;
	}

	/** Evaluates, turning a JSONata runtime error into one that names the expression (and the item, if any). */
	private async read(
		expression: CompiledExpression,
		input: unknown,
		index?: number,
	): Promise<unknown> {
		try {
			return await expression.read(input);
		} catch (error) {
			const failed = `failed: ${error?.message ?? error}`;
			const { field, source } = expression;
			throw index === undefined
				? expressionError(field, source, `the expression ${failed}`)
				: new PollItemError(index, `"${fieldRef(field)}" (${source}) ${failed}`);
		}
	}
}

function checkedKey(value: unknown, index: number): ItemKey {
	if (
		(typeof value === 'string' && value !== '') ||
		(typeof value === 'number' && Number.isFinite(value))
	)
		return value;
	throw new PollItemError(
		index,
		`"${fieldRef('id')}" must give a non-empty string or a finite number; it gave ${showValue(value)}.`,
	);
}

function checkedVersion(value: unknown, index: number): string {
	// A missing version cannot tell changed from unchanged; guessing either way would be silent.
	if (value === undefined)
		throw new PollItemError(index, `"${fieldRef('version')}" gave no value.`);
	return `v:${canonicalJson(value)}`;
}

/** A stable hash of the item's content: canonical JSON (sorted keys), sha256, 128 bits kept. */
export function contentHash(item: unknown): string {
	return `h:${createHash('sha256').update(canonicalJson(item)).digest('hex').slice(0, 32)}`;
}

/** JSON with object keys sorted at every level, so equal content gives equal text whatever the key order. */
export function canonicalJson(value: unknown): string {
	if (
		value !== null &&
		typeof value === 'object' &&
		typeof (value as { toJSON?: unknown }).toJSON === 'function'
	) {
		return canonicalJson((value as { toJSON(): unknown }).toJSON());
	}
	if (Array.isArray(value))
		return `[${value.map((element) => (element === undefined ? 'null' : canonicalJson(element))).join(',')}]`;
	if (value !== null && typeof value === 'object') {
		const record = value as Record<string, unknown>;
		const fields = Object.keys(record)
			.filter((key) => record[key] !== undefined)
			.sort()
			.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
		return `{${fields.join(',')}}`;
	}
	return JSON.stringify(value) ?? 'null';
}

function describeShape(value: unknown): string {
	if (value === undefined) return 'nothing';
	if (value === null) return 'null';
	if (typeof value !== 'object') return `a ${typeof value}`;
	const fields = Object.keys(value);
	const shown = fields.slice(0, 5).join(', ') + (fields.length > 5 ? ', …' : '');
	return fields.length ? `an object (fields: ${shown})` : 'an empty object';
}
