import argon2 from 'argon2';

/** At least 12 characters when set through the user endpoints (a shorter bootstrap password only warns). */
export const MIN_PASSWORD_LENGTH = 12;

/**
 * OWASP's first recommended argon2id setting (19 MiB, 2 passes, 1 lane): the library default (64 MiB, 3 passes,
 * 4 lanes) took ~180 ms a login on an idle 2-core machine, which a login burst turns into CPU starvation of the queue.
 * Parameters are stored in each hash, so raising them later still verifies existing hashes.
 */
const HASH_OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, HASH_OPTIONS);
}

/**
 * Verifies against the stored hash, or against a throwaway hash when the user does not exist, so an unknown
 * username costs the same argon2 time as a wrong password and reveals nothing by timing.
 */
export class PasswordVerifier {
  private decoy: Promise<string> | undefined;

  async verify(storedHash: string | null, password: string): Promise<boolean> {
    this.decoy ??= hashPassword('decoy password that matches nothing');
    const hash = storedHash ?? (await this.decoy);
    let matches = false;
    try {
      matches = await argon2.verify(hash, password);
    } catch {
      matches = false;
    }
    return storedHash !== null && matches;
  }

  /** Computes the decoy hash ahead of the first login so that login is not slower than the others. */
  async warmUp(): Promise<void> {
    this.decoy ??= hashPassword('decoy password that matches nothing');
    await this.decoy;
  }
}
