export * from './defaults.js';
export * from './prompts.js';
