// The languages every text a traveller reads comes in (spec §1): prompts and geo names alike.
export const LANGUAGES = ['en', 'ar'] as const;
export type Language = (typeof LANGUAGES)[number];
