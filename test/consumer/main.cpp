#include <asio_sync.hpp>

#include <boost/asio/io_context.hpp>

int main()
{
    boost::asio::io_context ctx;
    asio_sync::semaphore sem(ctx, 1);
    return sem.try_acquire() ? 0 : 1;
}
