import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { PollHistoryPostgres } from './PollHistoryPostgres.credentials';

describe('Poll History (PostgreSQL) credential', () => {
	const credential = new PollHistoryPostgres();

	test('is its own type with the fields of n8n Postgres credential, inherited', () => {
		expect(credential.name).toBe('pollHistoryPostgres');
		expect(credential.displayName).toBe('Poll History (PostgreSQL)');
		expect(credential.extends).toEqual(['postgres']);
		expect(credential.properties).toEqual([]);
	});

	test('has a light and a dark icon, both in credentials/', () => {
		expect(credential.icon).toEqual({
			light: 'file:pollHistoryPostgres.svg',
			dark: 'file:pollHistoryPostgres.dark.svg',
		});
		for (const file of Object.values(credential.icon)) {
			const path = join(__dirname, file.replace(/^file:/, ''));
			expect(existsSync(path)).toBe(true);
			expect(readFileSync(path, 'utf8')).toMatch(/^<svg [^>]*viewBox="0 0 60 60"/);
		}
	});

	test('is listed in package.json for n8n to load', () => {
		const manifest = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as {
			n8n: { credentials: string[] };
		};
		expect(manifest.n8n.credentials).toContain(
			'dist/credentials/PollHistoryPostgres.credentials.js',
		);
	});
});
