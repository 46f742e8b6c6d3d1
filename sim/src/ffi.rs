//! The cxx bridge to the Verilated models (see `cpp/model.h`).

#[cxx::bridge(namespace = "ferrite")]
pub(crate) mod bridge {
    unsafe extern "C++" {
        include!("ferrite-sim/cpp/model.h");

        type Model;

        fn new_model(name: &str) -> UniquePtr<Model>;
        fn eval(self: Pin<&mut Model>);
        fn tick(self: Pin<&mut Model>, time: u64, dump: bool);
        fn set_port(self: Pin<&mut Model>, port: u32, words: &[u32]);
        fn get_port(self: &Model, port: u32, words: &mut [u32]);
        fn trace_open(self: Pin<&mut Model>, path: &str) -> bool;
        fn trace_close(self: Pin<&mut Model>);
    }
}
