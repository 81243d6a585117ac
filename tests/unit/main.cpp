// The unit tests' entry point, for either Catch2 major version.
#ifdef NVL_CATCH2_V3
#include <catch2/catch_session.hpp>

int main(int argc, char** argv) {
    return Catch::Session().run(argc, argv);
}
#else
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#endif
