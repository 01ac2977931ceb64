// The serialport binding shapes, in one place. @serialport/bindings-interface ships CommonJS
// declarations only, so an ES module must name the `require` resolution mode to import its types;
// Biome does not parse that attribute yet, so this is the one file it skips.
export type {
  BindingInterface,
  BindingPortInterface,
  OpenOptions,
} from '@serialport/bindings-interface' with { 'resolution-mode': 'require' }
