import { ConfigError } from '../../core/configError';
import { credentialTestFailure } from './editorWords';

describe('credentialTestFailure', () => {
	it("says a credential's field and type as the editor shows them", () => {
		expect(
			credentialTestFailure(
				new ConfigError('port', 70_000, 'must be a whole number from 1 to 65535', {
					credential: 'sftp',
				}),
			),
		).toEqual({
			status: 'Error',
			message:
				'Invalid value 70000 for "Port" in the SFTP credential: must be a whole number from 1 to 65535',
		});
		expect(credentialTestFailure('refused').message).toBe('refused');
	});
});
